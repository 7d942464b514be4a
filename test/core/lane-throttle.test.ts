/**
 * The lane throttle's AIMD policy (core/lane-throttle.ts): halve on a 429 (floor 1, once per
 * epoch), +1 after K successes, capped at the lane's concurrency; and the shared throttle over
 * the in-memory store: slots, leases, and the 429s a model client's retries meet.
 */
import {
  initialLaneState,
  MemoryLaneStateStore,
  normalizeLaneState,
  onRateLimited,
  onSuccess,
  release,
  SharedLaneThrottle,
  takeSlot,
  ThrottledModelClient,
  type LaneState,
} from '../../core/lane-throttle';
import { ModelError, type ModelClient, type ModelRequest } from '../../core/model';
import type { Clock } from '../../core/rate';
import { ResilientModelClient } from '../../adapters/models/resilient-client';

const policy = { max: 8, recoverAfter: 3 };
const REQ: ModelRequest = { prompt: { text: 'p', sharedPrefixChars: 0 }, sample: 0, task: { paper: 'p', file: 'f', snippet: 's' } };

/** Waits resolve at once (on the next turn): a full lane is polled without real time passing. */
const instantClock: Clock = { now: () => 0, sleep: () => new Promise<void>((resolve) => setImmediate(resolve)) };

describe('the AIMD policy', () => {
  it('starts at the lane concurrency and halves on a 429, never below 1', () => {
    let s = initialLaneState(policy);
    expect(s.limit).toBe(8);
    const limits: number[] = [];
    for (let i = 0; i < 5; i++) {
      s = onRateLimited(s, s.epoch);
      limits.push(s.limit);
    }
    expect(limits).toEqual([4, 2, 1, 1, 1]);
  });

  it('cuts once per epoch: 429s of calls admitted before the cut cut nothing more', () => {
    const s0 = initialLaneState(policy);
    const s1 = onRateLimited(s0, s0.epoch);
    // Three more calls admitted in epoch 0 report their 429 after the cut.
    const s2 = [0, 0, 0].reduce((s, e) => onRateLimited(s, e), s1);
    expect([s1.limit, s2.limit, s2.epoch]).toEqual([4, 4, 1]);
    // A call admitted after the cut that meets a 429 cuts again.
    expect(onRateLimited(s2, s2.epoch).limit).toBe(2);
  });

  it('grows by one after K successes in a row, up to the lane concurrency', () => {
    let s: LaneState = { ...initialLaneState(policy), limit: 6 };
    const limits: number[] = [];
    for (let i = 0; i < 9; i++) {
      s = onSuccess(s, policy);
      limits.push(s.limit);
    }
    expect(limits).toEqual([6, 6, 7, 7, 7, 8, 8, 8, 8]);
    // A 429 resets the count: K more successes are needed.
    s = onRateLimited({ ...s, limit: 8 }, s.epoch);
    s = onSuccess(onSuccess(s, policy), policy);
    expect(s.limit).toBe(4);
  });

  it('keeps slots to the limit, drops expired leases and caps a limit above a lowered concurrency', () => {
    let s: LaneState = { ...initialLaneState({ max: 2 }) };
    s = takeSlot(s, 'a', 100)!;
    s = takeSlot(s, 'b', 200)!;
    expect(takeSlot(s, 'c', 300)).toBeNull();
    // a's lease ended at 100: at 150 its slot is free again.
    const later = normalizeLaneState(s, { max: 2 }, 150);
    expect(Object.keys(later.holders)).toEqual(['b']);
    expect(Object.keys(takeSlot(later, 'c', 300)!.holders).sort()).toEqual(['b', 'c']);
    expect(Object.keys(release(s, 'a').holders)).toEqual(['b']);
    expect(normalizeLaneState({ ...s, limit: 16 }, { max: 4 }, 0).limit).toBe(4);
  });
});

describe('SharedLaneThrottle over one store', () => {
  it('holds a second worker until the first gives its slot back, and counts successes towards recovery', async () => {
    const store = new MemoryLaneStateStore();
    const a = new SharedLaneThrottle('lane', { max: 2, recoverAfter: 1 }, store, { clock: instantClock });
    const b = new SharedLaneThrottle('lane', { max: 2, recoverAfter: 1 }, store, { clock: instantClock });
    const first = await a.acquire(60_000);
    await first.rateLimited(); // limit 2 -> 1
    expect((await b.snapshot()).limit).toBe(1);
    let second: Awaited<ReturnType<typeof b.acquire>> | undefined;
    const waiting = b.acquire(60_000).then((p) => (second = p));
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    expect(second).toBeUndefined();
    await first.end(true); // frees the slot; one success grows the limit back to 2
    await waiting;
    expect(second).toBeDefined();
    expect(await b.snapshot()).toMatchObject({ limit: 2, holders: { [Object.keys((await b.snapshot()).holders)[0]]: expect.any(Number) } });
    await second!.end(true);
    expect((await a.snapshot()).holders).toEqual({});
  });

  it('writes nothing for a 429 of a round already cut, so other workers do not conflict on it', async () => {
    const store = new MemoryLaneStateStore();
    let writes = 0;
    const counted = {
      read: (lane: string) => store.read(lane),
      write: (lane: string, state: LaneState, expected: number | null) => {
        writes++;
        return store.write(lane, state, expected);
      },
    };
    const t = new SharedLaneThrottle('lane', { max: 4 }, counted, { clock: instantClock });
    const first = await t.acquire(60_000);
    const second = await t.acquire(60_000);
    await first.rateLimited(); // cuts 4 -> 2
    const before = writes;
    await second.rateLimited(); // admitted before that cut: nothing to change
    expect(writes).toBe(before);
    expect(second.epoch).toBe(1); // but its next 429 belongs to the new round
    await second.rateLimited();
    expect(writes).toBe(before + 1);
    expect((await t.snapshot()).limit).toBe(1);
  });

  it('gives up waiting when the signal aborts', async () => {
    const store = new MemoryLaneStateStore();
    const t = new SharedLaneThrottle('lane', { max: 1 }, store, { clock: instantClock });
    await t.acquire(60_000);
    const abort = new AbortController();
    const waiting = t.acquire(60_000, abort.signal);
    abort.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
  });
});

describe('ThrottledModelClient', () => {
  it('reports each 429 the retry layer meets to the shared limit, and frees its slot whatever the outcome', async () => {
    const store = new MemoryLaneStateStore();
    const throttle = new SharedLaneThrottle('lane', { max: 8, recoverAfter: 100 }, store, { clock: instantClock });
    let calls = 0;
    const provider: ModelClient = {
      id: 'm',
      params: {},
      offline: false,
      complete: async () => {
        calls++;
        if (calls <= 2) throw new ModelError('rate_limit', 'slow down', 429);
        return { text: 'ok', usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0 }, finishReason: 'stop' };
      },
    };
    const retrying = new ResilientModelClient(provider, { clock: instantClock, random: () => 0 });
    const client = new ThrottledModelClient(retrying, throttle, { leaseMs: 60_000 });

    const res = await client.complete(REQ);

    expect(res.text).toBe('ok');
    // Two 429s of one call: the first cut (8 -> 4), the second one too, as it came after the cut.
    expect(await throttle.snapshot()).toMatchObject({ limit: 2, epoch: 2, holders: {} });

    const failing = new ThrottledModelClient({ ...provider, complete: async () => Promise.reject(new ModelError('auth', 'bad key', 401)) }, throttle, {
      leaseMs: 60_000,
    });
    await expect(failing.complete(REQ)).rejects.toThrow('bad key');
    expect((await throttle.snapshot()).holders).toEqual({});
  });
});
