import { ModelError, type ModelClient, type ModelRequest, type ModelResponse } from '../../core/model';
import { RateController } from '../../core/rate';
import { ResilientModelClient, type ResilienceEvent } from '../../adapters/models/resilient-client';
import { caught, recordingClock, request } from './support/provider-contract';
import { VirtualClock } from './support/virtual-clock';

const OK: ModelResponse = { text: 'ok', finishReason: 'stop', usage: { inputTokens: 100, cachedInputTokens: 0, outputTokens: 20, reasoningTokens: 0 } };

/** A client that fails with the scripted errors, in order, then answers. */
class ScriptedClient implements ModelClient {
  readonly id = 'scripted';
  readonly params = { model: 'm' };
  readonly offline = false;
  calls = 0;
  constructor(private readonly failures: unknown[]) {}
  async complete(_req: ModelRequest): Promise<ModelResponse> {
    const f = this.failures[this.calls++];
    if (f !== undefined) throw f;
    return OK;
  }
}

const server = (): ModelError => new ModelError('server', 'HTTP 500', 500);

describe('resilient client', () => {
  test('backs off with full jitter over a doubling cap', async () => {
    const inner = new ScriptedClient([server(), server(), server(), server()]);
    const clock = recordingClock();
    const rc = new ResilientModelClient(inner, { clock, random: () => 0.5, retry: { baseDelayMs: 1000, maxDelayMs: 60_000 } });

    await rc.complete(request());

    expect(clock.sleeps).toEqual([500, 1000, 2000, 4000]);
    expect(inner.calls).toBe(5);
  });

  test('never waits longer than the cap', async () => {
    const clock = recordingClock();
    const rc = new ResilientModelClient(new ScriptedClient(Array.from({ length: 9 }, server)), {
      clock,
      random: () => 0.999,
      retry: { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 8000 },
    });

    await rc.complete(request());

    expect(Math.max(...clock.sleeps)).toBeLessThanOrEqual(8000);
    expect(clock.sleeps.slice(-3).every((d) => d > 7900)).toBe(true);
  });

  test('gives up at once when Retry-After is longer than it will wait', async () => {
    const inner = new ScriptedClient([new ModelError('rate_limit', 'daily quota', 429, 3_600_000)]);
    const rc = new ResilientModelClient(inner, { clock: recordingClock() });

    const err = await caught(rc.complete(request()));

    expect(err.message).toBe('daily quota');
    expect(inner.calls).toBe(1);
  });

  test('an unexpected exception is an error of kind other and is not retried', async () => {
    const inner = new ScriptedClient([new TypeError('x is undefined')]);
    const rc = new ResilientModelClient(inner, { clock: recordingClock() });

    const err = await caught(rc.complete(request()));

    expect(err).toMatchObject({ kind: 'other', message: 'x is undefined', retryable: false });
    expect(inner.calls).toBe(1);
  });

  test('beforeRetry can stop the retries (the budget hook)', async () => {
    const inner = new ScriptedClient([new ModelError('timeout', 'timed out'), server()]);
    const rc = new ResilientModelClient(inner, {
      clock: recordingClock(),
      beforeRetry: () => {
        throw new Error('budget exhausted');
      },
    });

    await expect(rc.complete(request())).rejects.toThrow('budget exhausted');
    expect(inner.calls).toBe(1);
  });

  test('reports each retry and the final give-up', async () => {
    const events: ResilienceEvent[] = [];
    const rc = new ResilientModelClient(new ScriptedClient([server(), server()]), {
      clock: recordingClock(),
      random: () => 0,
      retry: { maxAttempts: 2 },
      onEvent: (e) => events.push(e),
    });

    await caught(rc.complete(request()));

    expect(events.map((e) => [e.type, e.attempt])).toEqual([
      ['retry', 1],
      ['give_up', 2],
    ]);
  });

  test('a 429 pauses the whole lane, not just the call that got it', async () => {
    const clock = new VirtualClock();
    const lane = new RateController({ limits: { maxInFlight: 4 }, clock });
    const rc = new ResilientModelClient(new ScriptedClient([new ModelError('rate_limit', 'slow down', 429, 1500)]), { clock, rate: lane, random: () => 0 });

    const p = rc.complete(request());
    await clock.advance(0);

    expect(lane.snapshot().pausedUntil).toBe(1500);
    await clock.advance(1500);
    await expect(p).resolves.toEqual(OK);
  });

  test('retries go through the lane, so calls in flight never exceed its limit', async () => {
    let running = 0;
    let peak = 0;
    let n = 0;
    const inner: ModelClient = {
      id: 'slow',
      params: {},
      offline: false,
      async complete() {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 2));
        running--;
        if (n++ % 3 === 0) throw new ModelError('server', 'flaky', 503);
        return OK;
      },
    };
    const lane = new RateController({ limits: { maxInFlight: 3 } });
    const rc = new ResilientModelClient(inner, { rate: lane, clock: { now: () => 0, sleep: async () => undefined } });

    const results = await Promise.all(Array.from({ length: 30 }, () => rc.complete(request())));

    expect(results).toHaveLength(30);
    expect(peak).toBe(3);
  });
});

describe('resilient client under repeated 429s', () => {
  const limited = (): ModelError => new ModelError('rate_limit', 'slow down', 429, 10);

  test('429s do not use up the attempts kept for other failures', async () => {
    const inner = new ScriptedClient([limited(), limited(), limited(), limited(), server(), limited()]);
    const rc = new ResilientModelClient(inner, { clock: recordingClock(), random: () => 0, retry: { maxAttempts: 2 } });

    await expect(rc.complete(request())).resolves.toEqual(OK);
    expect(inner.calls).toBe(7);
  });

  test('but they are bounded too', async () => {
    const inner = new ScriptedClient(Array.from({ length: 10 }, limited));
    const rc = new ResilientModelClient(inner, { clock: recordingClock(), random: () => 0, retry: { maxRateLimitRetries: 3 } });

    const err = await caught(rc.complete(request()));

    expect(err.kind).toBe('rate_limit');
    expect(inner.calls).toBe(4);
  });
});

describe('resilient client when the provider cannot be reached', () => {
  const unreachable = (): ModelError => new ModelError('unreachable', 'openai: not sent (ENOTFOUND)');

  test('gives up after maxUnreachableAttempts when no attempt reached the provider', async () => {
    const inner = new ScriptedClient(Array.from({ length: 10 }, unreachable));
    const rc = new ResilientModelClient(inner, { clock: recordingClock(), random: () => 0, retry: { maxAttempts: 6, maxUnreachableAttempts: 3 } });

    const err = await caught(rc.complete(request()));

    expect(err.kind).toBe('unreachable');
    expect(inner.calls).toBe(3);
  });

  test('a blip between answers from the provider keeps the ordinary attempt count', async () => {
    const inner = new ScriptedClient([unreachable(), server(), unreachable(), unreachable()]);
    const rc = new ResilientModelClient(inner, { clock: recordingClock(), random: () => 0, retry: { maxAttempts: 6, maxUnreachableAttempts: 2 } });

    await expect(rc.complete(request())).resolves.toEqual(OK);
    expect(inner.calls).toBe(5);
  });
});
