/**
 * One concurrency limit per provider lane, shared by every worker that calls the lane's
 * provider (the cloud's generator instances), adapting to 429s by AIMD: a 429 halves the
 * limit (never below 1), K successes in a row add one back, up to the lane's configured
 * concurrency. A worker takes a slot before a model call and gives it back after, saying how
 * the call went.
 *
 * The state lives behind the LaneStateStore port (one record per lane, compare-and-set
 * writes): DynamoDB in the cloud (adapters/aws/dynamo-lane-throttle.ts), memory here. A slot
 * is a lease: a worker that dies holding one stops counting once its lease runs out.
 *
 * Only one cut per round of 429s: a permit remembers the lane's epoch (bumped on each cut),
 * and a 429 of a call admitted before the latest cut cuts nothing, as the in-process
 * controller (core/rate.ts) and TCP do. Without it N instances that meet the same 429
 * together would halve the limit N times.
 */
import { randomUUID } from 'node:crypto';
import { ModelError, type ModelClient, type ModelRequest, type ModelResponse } from './model';
import { systemClock, type Clock } from './rate';

/** A lane's shared state. */
export interface LaneState {
  /** The current limit: slots at once, 1..max. */
  limit: number;
  /** Bumped on every cut. */
  epoch: number;
  /** Successes since the limit last changed. */
  successes: number;
  /** Slots held: owner -> lease end (epoch milliseconds). */
  holders: Record<string, number>;
}

/** The stored record and the version a compare-and-set write must match. */
export interface VersionedLaneState {
  state: LaneState;
  version: number;
}

/** The port: one record per lane, written only if unchanged since it was read. */
export interface LaneStateStore {
  /** The lane's record, or null when none was written yet (or it expired). */
  read(lane: string): Promise<VersionedLaneState | null>;
  /**
   * Write `state` if the record's version is still `expected` (null: no record yet); true when
   * written. The new version is `expected + 1` (1 for a new record).
   */
  write(lane: string, state: LaneState, expected: number | null): Promise<boolean>;
}

/** The AIMD policy of a lane. */
export interface LanePolicy {
  /** The lane's configured concurrency: the limit starts and is capped here. */
  max: number;
  /** Successes in a row after which the limit grows by one. @default DEFAULT_RECOVER_AFTER */
  recoverAfter?: number;
}

export const DEFAULT_RECOVER_AFTER = 5;

/** A fresh lane: at its configured concurrency. */
export function initialLaneState(policy: LanePolicy): LaneState {
  return { limit: Math.max(1, Math.floor(policy.max)), epoch: 0, successes: 0, holders: {} };
}

/** The state with expired leases dropped and the limit within 1..max (a deploy may have changed max). */
export function normalizeLaneState(state: LaneState, policy: LanePolicy, nowMs: number): LaneState {
  const holders = Object.fromEntries(Object.entries(state.holders).filter(([, until]) => until > nowMs));
  return { ...state, limit: Math.min(Math.max(1, Math.floor(policy.max)), Math.max(1, state.limit)), holders };
}

/** Take a slot for `owner` until `leaseUntil`, or null when the lane is full. */
export function takeSlot(state: LaneState, owner: string, leaseUntil: number): LaneState | null {
  if (Object.hasOwn(state.holders, owner)) return { ...state, holders: { ...state.holders, [owner]: leaseUntil } };
  if (Object.keys(state.holders).length >= state.limit) return null;
  return { ...state, holders: { ...state.holders, [owner]: leaseUntil } };
}

/** A 429 from a call admitted in `epoch`: halve the limit (floor 1) once per epoch; `state` itself when already cut. */
export function onRateLimited(state: LaneState, epoch: number): LaneState {
  if (epoch !== state.epoch) return state;
  return { ...state, limit: Math.max(1, Math.floor(state.limit / 2)), epoch: state.epoch + 1, successes: 0 };
}

/** A call that answered: after K successes in a row, one more slot, up to max. */
export function onSuccess(state: LaneState, policy: LanePolicy): LaneState {
  const k = Math.max(1, policy.recoverAfter ?? DEFAULT_RECOVER_AFTER);
  const successes = state.successes + 1;
  if (successes >= k && state.limit < policy.max) return { ...state, limit: state.limit + 1, successes: 0 };
  return { ...state, successes: state.limit < policy.max ? successes : 0 };
}

export function release(state: LaneState, owner: string): LaneState {
  const { [owner]: _gone, ...holders } = state.holders;
  return { ...state, holders };
}

/** A slot taken; end it once. */
export interface LanePermit {
  /** The lane's epoch when the slot was taken (or when this call last reported a 429). */
  readonly epoch: number;
  /** A 429 during the call (it may retry, keeping its slot): cut the shared limit once per epoch. */
  rateLimited(): Promise<void>;
  /** The call ended; `ok` when it answered. Gives the slot back. */
  end(ok: boolean): Promise<void>;
}

export interface LaneThrottleOptions {
  clock?: Clock;
  /** Wall-clock milliseconds for leases (shared across machines). @default Date.now */
  wallNow?: () => number;
  /** First wait while the lane is full, ms; doubles up to `maxPollMs`, with jitter. @default 250 */
  pollMs?: number;
  /** @default 5000 */
  maxPollMs?: number;
  /** Uniform [0, 1), for the jitter. @default Math.random */
  random?: () => number;
  /** Compare-and-set attempts on one change before giving up (a storm of writers). @default 50 */
  maxConflicts?: number;
}

/** What a worker does with a lane: wait for a slot, report 429s, give it back. */
export interface LaneThrottle {
  readonly lane: string;
  /** Wait for a slot held until `leaseMs` from now; rejects with the signal's reason when it aborts first. */
  acquire(leaseMs: number, signal?: AbortSignal): Promise<LanePermit>;
  /** The lane's state as stored (expired leases dropped), for logs and tests. */
  snapshot(): Promise<LaneState>;
}

/** The lane's slots changed under us more often than `maxConflicts` in a row. */
export class LaneContentionError extends Error {
  constructor(lane: string, attempts: number) {
    super(`lane ${lane}: ${attempts} conflicting writes in a row on its shared throttle record`);
    this.name = 'LaneContentionError';
  }
}

/** A LaneThrottle over a LaneStateStore: the same code in memory and over DynamoDB. */
export class SharedLaneThrottle implements LaneThrottle {
  private readonly clock: Clock;
  private readonly wallNow: () => number;
  private readonly random: () => number;

  constructor(
    readonly lane: string,
    private readonly policy: LanePolicy,
    private readonly store: LaneStateStore,
    private readonly opts: LaneThrottleOptions = {},
  ) {
    this.clock = opts.clock ?? systemClock;
    this.wallNow = opts.wallNow ?? Date.now;
    this.random = opts.random ?? Math.random;
  }

  async snapshot(): Promise<LaneState> {
    const cur = await this.store.read(this.lane);
    return normalizeLaneState(cur?.state ?? initialLaneState(this.policy), this.policy, this.wallNow());
  }

  async acquire(leaseMs: number, signal?: AbortSignal): Promise<LanePermit> {
    const owner = randomUUID();
    let wait = this.opts.pollMs ?? 250;
    for (;;) {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      let epoch = -1;
      const taken = await this.change((s) => {
        const next = takeSlot(s, owner, this.wallNow() + leaseMs);
        if (next) epoch = s.epoch;
        return next;
      });
      if (taken) return this.permit(owner, epoch);
      await this.clock.sleep(wait * (0.5 + this.random() / 2), signal);
      wait = Math.min(this.opts.maxPollMs ?? 5000, wait * 2);
    }
  }

  private permit(owner: string, admitted: number): LanePermit {
    let epoch = admitted;
    let ended = false;
    return {
      get epoch() {
        return epoch;
      },
      rateLimited: async () => {
        if (ended) return;
        await this.change((s) => {
          const next = onRateLimited(s, epoch);
          epoch = next.epoch;
          return next;
        });
      },
      end: async (ok: boolean) => {
        if (ended) return;
        ended = true;
        await this.change((s) => release(ok ? onSuccess(s, this.policy) : s, owner));
      },
    };
  }

  /** Read, apply `f` (null: no change wanted), write if unchanged; again on a conflict. True when written. */
  private async change(f: (s: LaneState) => LaneState | null): Promise<boolean> {
    const max = this.opts.maxConflicts ?? 50;
    for (let attempt = 1; attempt <= max; attempt++) {
      const cur = await this.store.read(this.lane);
      const state = normalizeLaneState(cur?.state ?? initialLaneState(this.policy), this.policy, this.wallNow());
      const next = f(state);
      if (!next) return false;
      // Nothing to change (a 429 of a round already cut): a write would only bump the version
      // and make every other worker's pending change conflict.
      if (next === state) return true;
      if (await this.store.write(this.lane, next, cur?.version ?? null)) return true;
      // Lost the race: a short random pause spreads the writers out.
      await this.clock.sleep(this.random() * Math.min(100, 5 * attempt));
    }
    throw new LaneContentionError(this.lane, max);
  }
}

/** The port in memory: for one process (the local runner may use it) and the policy's tests. */
export class MemoryLaneStateStore implements LaneStateStore {
  private readonly records = new Map<string, VersionedLaneState>();

  async read(lane: string): Promise<VersionedLaneState | null> {
    const r = this.records.get(lane);
    return r ? { state: structuredClone(r.state), version: r.version } : null;
  }

  async write(lane: string, state: LaneState, expected: number | null): Promise<boolean> {
    const r = this.records.get(lane);
    if ((r?.version ?? null) !== expected) return false;
    this.records.set(lane, { state: structuredClone(state), version: (expected ?? 0) + 1 });
    return true;
  }
}

export interface ThrottledClientOptions {
  /** Lease of a slot: longer than the call can take (in the cloud: the invocation's remaining time and a margin). */
  leaseMs: number;
}

/**
 * A model client whose every call holds a slot of its lane's shared throttle. Each 429 the
 * retry layer meets (ModelRequest.beforeRetry) or that ends the call is reported, so the shared
 * limit drops for every worker; an answer counts towards growing it back.
 */
export class ThrottledModelClient implements ModelClient {
  readonly id: string;
  readonly params: Record<string, unknown>;
  readonly offline: boolean;

  constructor(
    private readonly inner: ModelClient,
    private readonly throttle: LaneThrottle,
    private readonly opts: ThrottledClientOptions,
  ) {
    this.id = inner.id;
    this.params = inner.params;
    this.offline = inner.offline;
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const permit = await this.throttle.acquire(this.opts.leaseMs, req.signal);
    let ok = false;
    try {
      const res = await this.inner.complete({
        ...req,
        beforeRetry: async (error) => {
          if (error.kind === 'rate_limit') await permit.rateLimited().catch(() => undefined);
          await req.beforeRetry?.(error);
        },
      });
      ok = true;
      return res;
    } catch (err) {
      if (err instanceof ModelError && err.kind === 'rate_limit') await permit.rateLimited().catch(() => undefined);
      throw err;
    } finally {
      // A throttle record that cannot be written never costs the answer: the slot's lease
      // runs out by itself, and only this call's share of the adaptation is lost.
      await permit.end(ok).catch(() => undefined);
    }
  }
}
