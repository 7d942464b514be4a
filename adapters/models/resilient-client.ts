/**
 * Retries and rate control around any ModelClient. Every attempt waits for a slot in its
 * provider lane (in-flight, RPM and TPM limits, AIMD); a retryable failure waits with
 * exponential back-off and full jitter, or for the server's Retry-After, and tries again
 * up to a bounded number of attempts. A non-retryable error ends the call at once with
 * the provider's message, for the caller to record on the task.
 */
import { ModelError, type ModelClient, type ModelRequest, type ModelResponse } from '../../core/model';
import { systemClock, type Clock, type RateController } from '../../core/rate';

export interface RetryPolicy {
  /** Attempts in all, the first included, counting failures other than 429. @default 6 */
  maxAttempts: number;
  /**
   * 429s a call may meet before it gives up. Counted apart: under a rate limit a call can
   * lose the race for the lane several times without anything being wrong. @default 30
   */
  maxRateLimitRetries: number;
  /**
   * Attempts in all when every one failed before reaching the provider (DNS, refused
   * connection, TLS): one retry past a blip, without half a minute of back-off per task
   * when the machine is offline. @default 3
   */
  maxUnreachableAttempts: number;
  /** Cap of the first back-off; it doubles per attempt. @default 1000 */
  baseDelayMs: number;
  /** Cap of any back-off. @default 60000 */
  maxDelayMs: number;
  /** A Retry-After longer than this (a daily quota, say) ends the call instead of waiting. @default 300000 */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 6,
  maxRateLimitRetries: 30,
  maxUnreachableAttempts: 3,
  baseDelayMs: 1000,
  maxDelayMs: 60_000,
  maxRetryAfterMs: 300_000,
};

/** What happened on an attempt, for logs and metrics. */
export type ResilienceEvent =
  | { type: 'retry'; modelId: string; attempt: number; delayMs: number; error: ModelError }
  | { type: 'give_up'; modelId: string; attempt: number; error: ModelError };

export interface ResilientOptions {
  retry?: Partial<RetryPolicy>;
  /** The lane shared by every client of this provider + model; none means no rate control. */
  rate?: RateController;
  clock?: Clock;
  /** Uniform [0, 1), for the jitter. @default Math.random */
  random?: () => number;
  /** Tokens a request will count against the lane's TPM (prompt + max output). @default none */
  estimateTokens?: (req: ModelRequest) => number;
  /**
   * Called before each retry; throwing ends the call with that error. The budget hook: a
   * retry after a timeout may be billed again, so the caller can reserve for it here.
   */
  beforeRetry?: (info: { attempt: number; delayMs: number; error: ModelError }) => void | Promise<void>;
  onEvent?: (event: ResilienceEvent) => void;
}

export class ResilientModelClient implements ModelClient {
  readonly id: string;
  readonly params: Record<string, unknown>;
  readonly offline: boolean;
  private readonly policy: RetryPolicy;
  private readonly clock: Clock;
  private readonly random: () => number;

  constructor(
    private readonly inner: ModelClient,
    private readonly opts: ResilientOptions = {},
  ) {
    this.id = inner.id;
    this.params = inner.params;
    this.offline = inner.offline;
    this.policy = { ...DEFAULT_RETRY, ...opts.retry };
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const tokens = this.opts.estimateTokens?.(req) ?? 0;
    let failures = 0; // other than 429
    let rateLimited = 0;
    let unreachable = 0;
    for (let attempt = 1; ; attempt++) {
      const permit = this.opts.rate ? await this.opts.rate.acquire(tokens, req.signal) : undefined;
      let error: ModelError;
      try {
        const res = await this.inner.complete(req);
        permit?.succeeded(res.usage.inputTokens + res.usage.outputTokens || undefined);
        return res;
      } catch (err) {
        if (req.signal?.aborted) {
          permit?.released();
          throw err;
        }
        error = err instanceof ModelError ? err : new ModelError('other', err instanceof Error ? err.message : String(err));
      }
      if (error.kind === 'rate_limit') {
        rateLimited++;
        permit?.rateLimited(error.retryAfterMs);
      } else {
        failures++;
        if (error.kind === 'unreachable') unreachable++;
        permit?.released();
      }
      const delayMs = this.delay(error.kind === 'rate_limit' ? rateLimited : failures, error);
      const exhausted =
        error.kind === 'rate_limit'
          ? rateLimited > this.policy.maxRateLimitRetries
          : failures >= this.policy.maxAttempts || (unreachable === failures && unreachable >= this.policy.maxUnreachableAttempts);
      if (!error.retryable || exhausted || delayMs === undefined) {
        this.opts.onEvent?.({ type: 'give_up', modelId: this.id, attempt, error });
        throw error;
      }
      await this.opts.beforeRetry?.({ attempt, delayMs, error });
      await req.beforeRetry?.(error);
      this.opts.onEvent?.({ type: 'retry', modelId: this.id, attempt, delayMs, error });
      await this.clock.sleep(delayMs, req.signal);
    }
  }

  /**
   * Wait before the next attempt: the server's Retry-After plus up to 10% jitter when it
   * gave one (undefined when it is longer than we will wait), else full jitter over a cap
   * that doubles with each failure of the same family (429s, or the rest).
   */
  private delay(attempt: number, error: ModelError): number | undefined {
    if (error.retryAfterMs !== undefined) {
      if (error.retryAfterMs > this.policy.maxRetryAfterMs) return undefined;
      return error.retryAfterMs * (1 + 0.1 * this.random());
    }
    const cap = Math.min(this.policy.maxDelayMs, this.policy.baseDelayMs * 2 ** (attempt - 1));
    return this.random() * cap;
  }
}
