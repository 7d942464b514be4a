/**
 * Rate control for one provider lane (a provider + endpoint + model): at most N requests
 * in flight, requests-per-minute and tokens-per-minute token buckets, a pause when the
 * provider says Retry-After, and AIMD on the concurrency limit (repeated 429s halve it;
 * it grows back by one per quiet interval). Pure logic over an injectable clock, so that
 * the local pool and the cloud workers share it and tests run on virtual time.
 */

/** Time and waiting, injectable for tests. */
export interface Clock {
  /** Milliseconds on a monotonic scale. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(abortReason(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** Limits of one lane; every member optional (no limit). */
export interface RateLimits {
  /** Most requests in flight at once. @default 16 */
  maxInFlight?: number;
  /** Requests per minute. */
  rpm?: number;
  /** Tokens per minute (prompt + max output, as the providers count them at admission). */
  tpm?: number;
}

/** How the concurrency limit reacts to 429s. */
export interface AimdOptions {
  /** The limit never drops below this. @default 1 */
  minInFlight: number;
  /** Multiplier applied to the limit on a cut. @default 0.5 */
  decreaseFactor: number;
  /**
   * 429s within `windowMs` that trigger a cut; one 429 alone only pauses the lane. Only
   * calls admitted since the last cut count, so one burst of 429s from calls that were
   * already in flight cuts once (as TCP reacts once per round trip). @default 2
   */
  cutAfter: number;
  /** @default 10000 */
  windowMs: number;
  /** The limit grows by one after this long without a 429 (and a success to show for it). @default 10000 */
  recoverIntervalMs: number;
}

export const DEFAULT_MAX_IN_FLIGHT = 16;

const DEFAULT_AIMD: AimdOptions = {
  minInFlight: 1,
  decreaseFactor: 0.5,
  cutAfter: 2,
  windowMs: 10_000,
  recoverIntervalMs: 10_000,
};

export interface RateControllerOptions {
  limits: RateLimits;
  clock?: Clock;
  /**
   * Burst allowed by the RPM/TPM buckets, as milliseconds of their rate: a lane may send
   * `rpm * burstMs / 60000` requests at once after a quiet spell, never a whole minute's
   * worth (providers enforce their per-minute limits over shorter windows). @default 1000
   */
  burstMs?: number;
  aimd?: Partial<AimdOptions>;
}

/** A granted slot. End it once, with how the call went; later calls to any method are ignored. */
export interface RatePermit {
  /**
   * The call answered. `actualTokens` (the usage the provider reported) corrects the TPM
   * charge made at admission; without it the admission charge stands.
   */
  succeeded(actualTokens?: number): void;
  /** The call got a 429: pause the lane for `retryAfterMs` and, when 429s repeat, cut concurrency. */
  rateLimited(retryAfterMs?: number): void;
  /** The call failed otherwise, or was abandoned. */
  released(): void;
}

export interface RateSnapshot {
  /** Current concurrency limit (AIMD). */
  limit: number;
  maxInFlight: number;
  inFlight: number;
  queued: number;
  /** Clock time until which the lane is paused by a Retry-After, or 0. */
  pausedUntil: number;
  cuts: number;
}

interface Waiter {
  tokens: number;
  resolve: (p: RatePermit) => void;
  reject: (e: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** Admission control for one lane. */
export class RateController {
  private readonly clock: Clock;
  private readonly aimd: AimdOptions;
  private readonly maxInFlight: number;
  private readonly rpm?: TokenBucket;
  private readonly tpm?: TokenBucket;
  private limit: number;
  private inFlight = 0;
  private readonly queue: Waiter[] = [];
  private pausedUntil = 0;
  private recent429: number[] = [];
  private lastChangeAt = -Infinity;
  private last429At = -Infinity;
  private cuts = 0;
  /** Bumped on every cut; a permit remembers the epoch it was admitted in. */
  private epoch = 0;
  private wake?: { due: number; abort: AbortController };

  constructor(opts: RateControllerOptions) {
    this.clock = opts.clock ?? systemClock;
    this.aimd = { ...DEFAULT_AIMD, ...opts.aimd };
    this.maxInFlight = Math.max(1, Math.floor(opts.limits.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT));
    this.limit = this.maxInFlight;
    const burstMs = opts.burstMs ?? 1000;
    const now = this.clock.now();
    if (opts.limits.rpm) this.rpm = TokenBucket.perMinute(opts.limits.rpm, burstMs, now);
    if (opts.limits.tpm) this.tpm = TokenBucket.perMinute(opts.limits.tpm, burstMs, now);
  }

  /** Wait for a slot for a call expected to use `tokens` tokens (for the TPM bucket). */
  acquire(tokens = 0, signal?: AbortSignal): Promise<RatePermit> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<RatePermit>((resolve, reject) => {
      const waiter: Waiter = { tokens: Math.max(0, tokens), resolve, reject, signal };
      if (signal) {
        waiter.onAbort = () => {
          const i = this.queue.indexOf(waiter);
          if (i >= 0) this.queue.splice(i, 1);
          reject(abortReason(signal));
          this.pump();
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.queue.push(waiter);
      this.pump();
    });
  }

  /**
   * A 429 seen outside a permit (or from a call admitted in `epoch`): pause the lane for
   * the server's Retry-After and, when 429s repeat among calls admitted since the last
   * cut, cut concurrency.
   */
  onRateLimited(retryAfterMs?: number, epoch: number = this.epoch): void {
    const now = this.clock.now();
    this.last429At = now;
    if (retryAfterMs && retryAfterMs > 0) this.pausedUntil = Math.max(this.pausedUntil, now + retryAfterMs);
    if (epoch === this.epoch) {
      this.recent429 = this.recent429.filter((t) => now - t < this.aimd.windowMs);
      this.recent429.push(now);
      if (this.recent429.length >= this.aimd.cutAfter) {
        this.limit = Math.max(this.aimd.minInFlight, Math.floor(this.limit * this.aimd.decreaseFactor));
        this.lastChangeAt = now;
        this.recent429 = [];
        this.cuts++;
        this.epoch++;
      }
    }
    this.pump();
  }

  /** A successful call: after a quiet interval, grow the limit back by one. The caller pumps. */
  private recover(): void {
    const now = this.clock.now();
    const quietSince = Math.max(this.lastChangeAt, this.last429At);
    if (this.limit < this.maxInFlight && now - quietSince >= this.aimd.recoverIntervalMs) {
      this.limit += 1;
      this.lastChangeAt = now;
    }
  }

  snapshot(): RateSnapshot {
    return {
      limit: this.limit,
      maxInFlight: this.maxInFlight,
      inFlight: this.inFlight,
      queued: this.queue.length,
      pausedUntil: this.pausedUntil > this.clock.now() ? this.pausedUntil : 0,
      cuts: this.cuts,
    };
  }

  private pump(): void {
    while (this.queue.length > 0) {
      if (this.inFlight >= this.limit) return; // a release pumps again
      const now = this.clock.now();
      const head = this.queue[0];
      let wait = this.pausedUntil - now;
      if (this.rpm) wait = Math.max(wait, this.rpm.waitFor(1, now));
      if (this.tpm && head.tokens > 0) wait = Math.max(wait, this.tpm.waitFor(head.tokens, now));
      if (wait > 0) {
        this.wakeIn(wait, now);
        return;
      }
      this.queue.shift();
      if (head.signal && head.onAbort) head.signal.removeEventListener('abort', head.onAbort);
      this.rpm?.take(1);
      this.tpm?.take(head.tokens);
      this.inFlight++;
      head.resolve(this.permit(head.tokens, this.epoch));
    }
  }

  private permit(charged: number, epoch: number): RatePermit {
    let ended = false;
    const end = (): boolean => {
      if (ended) return false;
      ended = true;
      this.inFlight--;
      return true;
    };
    return {
      succeeded: (actualTokens?: number) => {
        if (!end()) return;
        if (this.tpm && actualTokens !== undefined) this.tpm.adjust(charged - actualTokens, this.clock.now());
        this.recover();
        this.pump();
      },
      rateLimited: (retryAfterMs?: number) => {
        if (!end()) return;
        this.onRateLimited(retryAfterMs, epoch);
      },
      released: () => {
        if (end()) this.pump();
      },
    };
  }

  private wakeIn(ms: number, now: number): void {
    const due = now + ms;
    if (this.wake && this.wake.due <= due) return;
    this.wake?.abort.abort();
    const abort = new AbortController();
    const wake = { due, abort };
    this.wake = wake;
    this.clock.sleep(ms, abort.signal).then(
      () => {
        if (this.wake === wake) this.wake = undefined;
        this.pump();
      },
      () => undefined,
    );
  }
}

/**
 * A token bucket: `rate` tokens per ms up to `capacity`. A request larger than the
 * capacity waits for a full bucket and then drives it negative, so it is neither refused
 * nor starved.
 */
class TokenBucket {
  private level: number;
  private last: number;

  private constructor(
    private readonly rate: number,
    private readonly capacity: number,
    now: number,
  ) {
    this.level = capacity;
    this.last = now;
  }

  static perMinute(perMinute: number, burstMs: number, now: number): TokenBucket {
    const rate = perMinute / 60_000;
    return new TokenBucket(rate, Math.max(1, rate * burstMs), now);
  }

  /** Milliseconds until `n` tokens (or a full bucket, if n exceeds it) are available. */
  waitFor(n: number, now: number): number {
    this.refill(now);
    const need = Math.min(n, this.capacity);
    const missing = need - this.level;
    return missing <= 1e-9 ? 0 : missing / this.rate;
  }

  take(n: number): void {
    this.level -= n;
  }

  /** Give back (positive) or charge more (negative). */
  adjust(n: number, now: number): void {
    this.refill(now);
    this.level = Math.min(this.capacity, this.level + n);
  }

  private refill(now: number): void {
    if (now > this.last) {
      this.level = Math.min(this.capacity, this.level + (now - this.last) * this.rate);
      this.last = now;
    }
  }
}

/** One RateController per lane key, created on first use and shared by every client of the lane. */
export class RateLanes {
  private readonly lanes = new Map<string, RateController>();

  constructor(private readonly opts: Omit<RateControllerOptions, 'limits'> = {}) {}

  /** The lane's controller; the limits given when the lane is first asked for win. */
  lane(key: string, limits: RateLimits): RateController {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = new RateController({ ...this.opts, limits });
      this.lanes.set(key, lane);
    }
    return lane;
  }

  snapshot(): Record<string, RateSnapshot> {
    return Object.fromEntries([...this.lanes].map(([k, v]) => [k, v.snapshot()]));
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}
