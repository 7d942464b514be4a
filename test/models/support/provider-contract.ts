/**
 * The behaviour every provider client must show against its wire format: success with
 * usage, truncation, 429 + Retry-After, 5xx, a timeout, unparsable JSON, a dropped
 * connection, and the errors that must not be retried. Each provider test supplies the
 * replies in its own format.
 */
import type { Clock } from '../../../core/rate';
import { ModelError, type FinishReason, type ModelClient, type ModelRequest } from '../../../core/model';
import type { BilledUsage } from '../../../core/cost';
import type { ProviderClientOptions } from '../../../adapters/models/provider-common';
import { ResilientModelClient } from '../../../adapters/models/resilient-client';
import { startFakeProvider, type FakeProvider, type Reply } from './fake-provider';

export const PREFIX = 'You are completing code from a paper.\n\\section{Method} The loss is ...\n';
export const SUFFIX = 'Fill in the snippet `compute_loss`.';

export function request(signal?: AbortSignal): ModelRequest {
  return {
    prompt: { text: PREFIX + SUFFIX, sharedPrefixChars: PREFIX.length },
    sample: 0,
    task: { paper: 'p', file: 'f.py', snippet: 's' },
    signal,
  };
}

export interface ProviderFixture {
  name: string;
  http2?: boolean;
  /** Build the client against the fake server's URL. */
  client(url: string, opts: ProviderClientOptions): Promise<ModelClient> | ModelClient;
  success: Reply;
  expected: { text: string; finishReason: FinishReason; usage: BilledUsage };
  truncated: Reply;
  rateLimited(retryAfterSeconds: number): Reply;
  serverError: Reply;
  badRequest(message: string): Reply;
  unauthorized: Reply;
  contextTooLong: Reply;
  /** A 200 whose body is not the JSON it claims to be. */
  malformed?: Reply;
}

/** A clock whose sleeps return at once and are recorded. */
export function recordingClock(): Clock & { sleeps: number[] } {
  let t = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      t += ms;
    },
  };
}

export async function caught(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ModelError) return e;
    throw new Error(`expected a ModelError, got ${String(e)}`);
  }
  throw new Error('expected the call to fail');
}

export function providerContract(f: ProviderFixture): void {
  describe(`${f.name} client against its wire format`, () => {
    let server: FakeProvider;
    let client: ModelClient;
    const timeoutMs = 400;

    beforeAll(async () => {
      server = await startFakeProvider(() => f.success, { http2: f.http2 });
      client = await f.client(server.url, { timeoutMs, aws: { region: 'us-east-1', credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' } } });
    });
    afterAll(async () => {
      (client as { close?: () => void }).close?.();
      await server.close();
    });
    beforeEach(() => {
      server.requests.length = 0;
    });

    function resilient(maxAttempts = 4): { rc: ResilientModelClient; clock: ReturnType<typeof recordingClock> } {
      const clock = recordingClock();
      return { rc: new ResilientModelClient(client, { clock, random: () => 0, retry: { maxAttempts } }), clock };
    }

    test('a success maps the text, the finish reason and the usage', async () => {
      const res = await client.complete(request());

      expect(res.text).toBe(f.expected.text);
      expect(res.finishReason).toBe(f.expected.finishReason);
      expect(res.usage).toEqual(f.expected.usage);
      expect(server.requests).toHaveLength(1);
    });

    test('an answer cut at the output limit is reported as length', async () => {
      server.reply(f.truncated);

      const res = await client.complete(request());

      expect(res.finishReason).toBe('length');
    });

    test('429 with Retry-After is retried after the wait the server asked for', async () => {
      server.reply(f.rateLimited(2));
      const { rc, clock } = resilient();

      const res = await rc.complete(request());

      expect(res.text).toBe(f.expected.text);
      expect(server.requests).toHaveLength(2);
      expect(clock.sleeps).toEqual([2000]);
    });

    test('429 alone is a retryable rate_limit error carrying retryAfterMs', async () => {
      server.reply(f.rateLimited(3));

      const err = await caught(client.complete(request()));

      expect(err.kind).toBe('rate_limit');
      expect(err.retryable).toBe(true);
      expect(err.status).toBe(429);
      expect(err.retryAfterMs).toBe(3000);
    });

    test('a 5xx is a server error, retried with back-off, then the answer returns', async () => {
      server.reply(f.serverError);
      const { rc, clock } = resilient();

      const res = await rc.complete(request());

      expect(res.text).toBe(f.expected.text);
      expect(server.requests).toHaveLength(2);
      expect(clock.sleeps).toHaveLength(1);
    });

    test('a response slower than the timeout is a timeout error, and the retry succeeds', async () => {
      server.reply({ ...f.success, delayMs: timeoutMs * 3 });
      const err = await caught(client.complete(request()));
      expect(err.kind).toBe('timeout');
      expect(err.retryable).toBe(true);

      server.reply({ ...f.success, delayMs: timeoutMs * 3 });
      const { rc } = resilient();
      const res = await rc.complete(request());

      expect(res.text).toBe(f.expected.text);
    });

    test('unparsable JSON is a malformed_response', async () => {
      server.reply(f.malformed ?? { status: 200, body: '{"id": "x", "trunc' });

      const err = await caught(client.complete(request()));

      expect(err.kind).toBe('malformed_response');
    });

    test('a dropped connection is a network error and is retried', async () => {
      server.reply({ reset: true });
      const err = await caught(client.complete(request()));
      expect(err.kind).toBe('network');
      expect(err.retryable).toBe(true);

      server.reply({ reset: true });
      const { rc } = resilient();
      await expect(rc.complete(request())).resolves.toMatchObject({ text: f.expected.text });
    });

    test('400 is a bad_request with the provider message and is not retried', async () => {
      server.reply(f.badRequest('temperature is out of range'));
      const { rc, clock } = resilient();

      const err = await caught(rc.complete(request()));

      expect(err.kind).toBe('bad_request');
      expect(err.status).toBe(400);
      expect(err.message).toContain('temperature is out of range');
      expect(server.requests).toHaveLength(1);
      expect(clock.sleeps).toEqual([]);
    });

    test('a refused key (401/403) is auth and is not retried', async () => {
      server.reply(f.unauthorized);
      const { rc } = resilient();

      const err = await caught(rc.complete(request()));

      expect(err.kind).toBe('auth');
      expect(server.requests).toHaveLength(1);
    });

    test('a prompt longer than the context window is context_length and is not retried', async () => {
      server.reply(f.contextTooLong);
      const { rc } = resilient();

      const err = await caught(rc.complete(request()));

      expect(err.kind).toBe('context_length');
      expect(err.retryable).toBe(false);
      expect(server.requests).toHaveLength(1);
    });

    test('retries stop after the last attempt with the last error', async () => {
      server.reply(f.serverError, f.serverError, f.serverError);
      const { rc } = resilient(3);

      const err = await caught(rc.complete(request()));

      expect(err.kind).toBe('server');
      expect(server.requests).toHaveLength(3);
    });

    test('a caller abort ends the call without a retry', async () => {
      server.reply({ ...f.success, delayMs: timeoutMs * 2 });
      const abort = new AbortController();
      const { rc } = resilient();

      const p = rc.complete(request(abort.signal));
      // Abort once the call is in flight (the server has it), not after a fixed delay: on a
      // loaded machine an SDK can take longer than any fixed delay to send its request.
      const settled = p.then(
        () => undefined,
        () => undefined,
      );
      while (server.requests.length === 0 && !(await Promise.race([settled.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 10))]))) {}
      abort.abort();

      await expect(p).rejects.not.toBeInstanceOf(ModelError);
      expect(server.requests).toHaveLength(1);
    });
  });
}
