/**
 * Two generator "instances" (each its own DynamoLaneStateStore and SharedLaneThrottle, as two
 * Lambda instances have) share one lane on dynalite, calling a fake provider through the retry
 * layer. The provider answers 429 while `capacity` calls are in flight: the shared limit drops
 * from the lane's concurrency to at most the capacity, for both instances at once; once the
 * provider takes the full concurrency again the limit grows back to it.
 *
 * Deterministic, with no clock: a throttle's DynamoDB round trips take far longer than any
 * real-time "latency" the provider could fake, so calls would never overlap and no 429 would
 * ever come (the first version of this test waited for one until it was killed). Instead an
 * admitted call stays in flight until every slot holder of the lane (as last written to the
 * table) is at the provider, or a 429 was given while it waited: events, not time.
 */
import { DynamoLaneStateStore } from '../../adapters/aws/dynamo-lane-throttle';
import { ResilientModelClient } from '../../adapters/models/resilient-client';
import { SharedLaneThrottle, ThrottledModelClient, type LaneState, type LaneStateStore, type VersionedLaneState } from '../../core/lane-throttle';
import { ModelError, type ModelClient, type ModelRequest } from '../../core/model';
import { startDynalite, type LocalDynamo } from '../aws/local-servers';

jest.setTimeout(240_000); // dynalite shares the CPU with the rest of a loaded suite

/** The lane's concurrency, and the calls the provider takes at once while it throttles. */
const MAX = 4;
const CAPACITY = 1;
const REQ: ModelRequest = { prompt: { text: 'p', sharedPrefixChars: 0 }, sample: 0, task: { paper: 'p', file: 'f', snippet: 's' } };

/** A provider that admits `capacity` calls at once and answers 429 beyond; an admitted call answers on an event (see above). */
class FakeProvider implements ModelClient {
  readonly id = 'fake/model';
  readonly params = {};
  readonly offline = false;
  capacity = CAPACITY;
  inFlight = 0;
  peak = 0;
  rateLimited = 0;
  answered = 0;
  /** Slot holders in the lane's latest written record (highest version seen). */
  private holders = 0;
  private version = 0;
  private readonly waiting = new Set<() => void>();

  /** A write of the lane's record went through. */
  written(state: LaneState, version: number): void {
    if (version <= this.version) return;
    this.version = version;
    this.holders = Object.keys(state.holders).length;
    this.poke();
  }

  private poke(): void {
    for (const check of [...this.waiting]) check();
  }

  async complete(): Promise<{
    text: string;
    usage: { inputTokens: number; cachedInputTokens: number; outputTokens: number; reasoningTokens: number };
    finishReason: 'stop';
  }> {
    if (this.inFlight >= this.capacity) {
      this.rateLimited++;
      this.poke();
      throw new ModelError('rate_limit', 'too many requests', 429);
    }
    this.inFlight++;
    this.peak = Math.max(this.peak, this.inFlight);
    const seen429s = this.rateLimited;
    await new Promise<void>((resolve) => {
      const check = () => {
        if (this.inFlight >= this.holders || this.rateLimited > seen429s) {
          this.waiting.delete(check);
          resolve();
        }
      };
      this.waiting.add(check);
      this.poke();
    });
    this.inFlight--;
    this.answered++;
    return { text: 'ok', usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0 }, finishReason: 'stop' };
  }
}

/** The lane's store, telling the provider of each write that went through. */
class ObservedStore implements LaneStateStore {
  constructor(
    private readonly inner: LaneStateStore,
    private readonly provider: FakeProvider,
  ) {}

  read(lane: string): Promise<VersionedLaneState | null> {
    return this.inner.read(lane);
  }

  async write(lane: string, state: LaneState, expected: number | null): Promise<boolean> {
    const ok = await this.inner.write(lane, state, expected);
    if (ok) this.provider.written(state, (expected ?? 0) + 1);
    return ok;
  }
}

let dynamo: LocalDynamo;
beforeAll(async () => {
  dynamo = await startDynalite();
});
afterAll(async () => {
  await dynamo.close();
});

describe('a lane throttle shared by two instances on DynamoDB', () => {
  it('drops the shared limit under 429s and grows it back when the provider recovers', async () => {
    const tableName = await dynamo.createTable();
    const provider = new FakeProvider();
    const instance = () => {
      const throttle = new SharedLaneThrottle(
        'fake',
        { max: MAX, recoverAfter: 2 },
        new ObservedStore(new DynamoLaneStateStore(dynamo.doc, { tableName }), provider),
        {
          pollMs: 20,
          maxPollMs: 80,
        },
      );
      // The retry layer backs off a millisecond or so between attempts.
      const client = new ThrottledModelClient(
        new ResilientModelClient(provider, { retry: { baseDelayMs: 2, maxDelayMs: 5, maxRateLimitRetries: 1000 } }),
        throttle,
        {
          leaseMs: 60_000,
        },
      );
      return { throttle, client };
    };
    const a = instance();
    const b = instance();
    /** The limit each instance read after each of its calls. */
    const seen = { a: [] as number[], b: [] as number[] };
    let last = MAX;
    let stop = false;
    // A phase ends on a call's end (an event), when its condition holds.
    let phase: { done: () => boolean; resolve: () => void } | undefined;
    const until = (done: () => boolean) => new Promise<void>((resolve) => (phase = { done, resolve }));
    const worker = async (name: 'a' | 'b', i: { throttle: SharedLaneThrottle; client: ModelClient }) => {
      while (!stop) {
        await i.client.complete(REQ);
        last = (await i.throttle.snapshot()).limit;
        seen[name].push(last);
        if (phase?.done()) {
          phase.resolve();
          phase = undefined;
        }
      }
    };
    // MAX workers per instance: twice what the lane allows, as the lane's Lambda instances would be.
    const workers = Promise.all([...Array.from({ length: MAX }, () => worker('a', a)), ...Array.from({ length: MAX }, () => worker('b', b))]);
    const phaseOrFailure = (done: () => boolean) => Promise.race([until(done), workers.then(() => Promise.reject(new Error('workers stopped early')))]);

    // Phase 1: the provider takes CAPACITY at once. The shared limit comes down to it, as both instances read it.
    await phaseOrFailure(() => seen.a.some((l) => l <= provider.capacity) && seen.b.some((l) => l <= provider.capacity));
    const dropped = Math.min(...seen.a, ...seen.b);
    const after429s = provider.rateLimited;
    const peakBefore = provider.peak;

    // Phase 2: the provider takes the lane's full concurrency again: the limit grows back.
    provider.capacity = MAX;
    provider.peak = 0;
    const recoveredAfter = seen.a.length + seen.b.length;
    await phaseOrFailure(() => last === MAX && provider.peak > CAPACITY);
    const rateLimitedWhileRecovering = provider.rateLimited - after429s;
    stop = true;
    await workers;

    // Assess.
    expect(after429s).toBeGreaterThan(0);
    expect(dropped).toBeLessThanOrEqual(CAPACITY);
    expect(peakBefore).toBeLessThanOrEqual(CAPACITY);
    expect(rateLimitedWhileRecovering).toBe(0);
    expect(seen.a.length + seen.b.length).toBeGreaterThan(recoveredAfter);
    expect(provider.peak).toBeGreaterThan(CAPACITY);
    expect(provider.peak).toBeLessThanOrEqual(MAX);
    const final = await b.throttle.snapshot();
    expect(final).toMatchObject({ limit: MAX, holders: {} });
    process.stderr.write(
      `lane throttle: ${provider.answered} answers, ${provider.rateLimited} 429s; shared limit ${MAX} -> ${dropped} -> ${final.limit}; peak in flight ${peakBefore} under 429s, ${provider.peak} after\n`,
    );
  });
});
