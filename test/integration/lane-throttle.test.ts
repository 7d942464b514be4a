/**
 * Two generator "instances" (each its own DynamoLaneStateStore and SharedLaneThrottle, as two
 * Lambda instances have) share one lane on dynalite, calling a fake provider through the retry
 * layer. The provider answers 429 while more than CAPACITY calls are in flight: the shared
 * limit drops from the lane's concurrency towards CAPACITY, for both instances at once; once
 * the provider takes the full concurrency again the limit grows back to it.
 */
import { DynamoLaneStateStore } from '../../adapters/aws/dynamo-lane-throttle';
import { ResilientModelClient } from '../../adapters/models/resilient-client';
import { SharedLaneThrottle, ThrottledModelClient } from '../../core/lane-throttle';
import { ModelError, type ModelClient, type ModelRequest } from '../../core/model';
import { startDynalite, type LocalDynamo } from '../aws/local-servers';

jest.setTimeout(300_000);

const MAX = 8;
const REQ: ModelRequest = { prompt: { text: 'p', sharedPrefixChars: 0 }, sample: 0, task: { paper: 'p', file: 'f', snippet: 's' } };

/** A provider that admits `capacity` calls at once and answers 429 beyond; each call takes a turn of the event loop or two. */
class FakeProvider implements ModelClient {
  readonly id = 'fake/model';
  readonly params = {};
  readonly offline = false;
  capacity = 2;
  inFlight = 0;
  peak = 0;
  rateLimited = 0;
  answered = 0;

  async complete(): Promise<{
    text: string;
    usage: { inputTokens: number; cachedInputTokens: number; outputTokens: number; reasoningTokens: number };
    finishReason: 'stop';
  }> {
    if (this.inFlight >= this.capacity) {
      this.rateLimited++;
      throw new ModelError('rate_limit', 'too many requests', 429);
    }
    this.inFlight++;
    this.peak = Math.max(this.peak, this.inFlight);
    // The call's latency: a few turns, so calls of both instances overlap.
    for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    this.inFlight--;
    this.answered++;
    return { text: 'ok', usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0 }, finishReason: 'stop' };
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
      const throttle = new SharedLaneThrottle('fake', { max: MAX, recoverAfter: 2 }, new DynamoLaneStateStore(dynamo.doc, { tableName }), {
        pollMs: 5,
        maxPollMs: 20,
      });
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
    const limits: number[] = [];
    let stop = false;
    const worker = async (client: ModelClient) => {
      while (!stop) {
        await client.complete(REQ);
        limits.push((await a.throttle.snapshot()).limit);
      }
    };
    // MAX workers per instance: twice what the lane allows, as the lane's Lambda instances would be.
    const run = (fn: () => boolean) =>
      new Promise<void>((resolve, reject) => {
        const check = setInterval(() => {
          if (fn()) {
            clearInterval(check);
            resolve();
          }
        }, 10);
        workers.catch((e) => {
          clearInterval(check);
          reject(e);
        });
      });
    const workers = Promise.all([...Array.from({ length: MAX }, () => worker(a.client)), ...Array.from({ length: MAX }, () => worker(b.client))]);

    // Phase 1: the provider takes 2 at once. The shared limit comes down to it.
    await run(() => limits.length > 0 && limits[limits.length - 1] <= provider.capacity);
    const dropped = Math.min(...limits);
    const after429s = provider.rateLimited;
    const seenByB = (await b.throttle.snapshot()).limit;

    // Phase 2: the provider takes the lane's full concurrency again: the limit grows back.
    provider.capacity = MAX;
    const peakBefore = provider.peak;
    provider.peak = 0;
    await run(() => limits[limits.length - 1] === MAX);
    stop = true;
    await workers;

    // Assess.
    expect(after429s).toBeGreaterThan(0);
    expect(dropped).toBeLessThanOrEqual(2);
    expect(seenByB).toBeLessThanOrEqual(2); // one limit for both instances
    expect(peakBefore).toBeLessThanOrEqual(MAX);
    expect(provider.peak).toBeGreaterThan(2);
    expect(provider.peak).toBeLessThanOrEqual(MAX);
    const final = await b.throttle.snapshot();
    expect(final).toMatchObject({ limit: MAX, holders: {} });
    process.stderr.write(
      `lane throttle: ${provider.answered} answers, ${provider.rateLimited} 429s; shared limit ${MAX} -> ${dropped} -> ${final.limit}; peak in flight ${peakBefore} under 429s, ${provider.peak} after\n`,
    );
  });
});
