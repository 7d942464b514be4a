import {
  errorFromSdk,
  errorFromStatus,
  errorFromTransport,
  isContextLengthMessage,
  retryAfterMs,
  retryDelayFromGoogleBody,
} from '../../adapters/models/provider-errors';

/** A failure the way undici's fetch reports it: TypeError('fetch failed') caused by the system error. */
function fetchFailed(code: string, syscall?: string): Error {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(`${syscall ?? 'read'} ${code} api.example`), { code, syscall }) });
}

describe('provider error classification', () => {
  test('Retry-After is read as ms, seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-29T12:00:00Z');

    expect(retryAfterMs(new Headers({ 'retry-after-ms': '120' }), now)).toBe(120);
    expect(retryAfterMs({ 'Retry-After': '1.5' }, now)).toBe(1500);
    expect(retryAfterMs({ 'retry-after': 'Sun, 29 Nov 2026 12:00:30 GMT' }, now)).toBe(30_000);
    expect(retryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  test("Google's RetryInfo delay is read from the error body", () => {
    expect(retryDelayFromGoogleBody('{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}')).toBe(37_000);
    expect(retryDelayFromGoogleBody('{"retryDelay": "0.5s"}')).toBe(500);
  });

  test.each([
    ["This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."],
    ['prompt is too long: 210000 tokens > 200000 maximum'],
    ['The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).'],
    ['Input is too long for requested model.'],
    ['Your input exceeds the context window of this model.'],
  ])('"%s" is a context-length message', (message) => {
    expect(isContextLengthMessage(message)).toBe(true);
  });

  test.each([
    ['ENOTFOUND', 'getaddrinfo'],
    ['EAI_AGAIN', 'getaddrinfo'],
    ['ECONNREFUSED', 'connect'],
    ['EHOSTUNREACH', 'connect'],
    ['UND_ERR_CONNECT_TIMEOUT', undefined],
    ['ERR_SSL_WRONG_VERSION_NUMBER', undefined],
    ['CERT_HAS_EXPIRED', undefined],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', undefined],
  ])('%s (%s) never reached the provider: unreachable, retryable, not billed', (code, syscall) => {
    const err = errorFromTransport('openai', fetchFailed(code, syscall))!;
    expect(err.kind).toBe('unreachable');
    expect(err.retryable).toBe(true);
    expect(err.message).toContain(code);
  });

  test.each([['ECONNRESET'], ['EPIPE'], ['EHOSTUNREACH']])('%s on an open connection may have been billed: network', (code) => {
    expect(errorFromTransport('openai', fetchFailed(code, 'read'))!.kind).toBe('network');
  });

  test("a Stainless SDK's connection error keeps the cause's classification", () => {
    class APIConnectionError extends Error {}
    const err = new APIConnectionError('Connection error.', { cause: fetchFailed('ENOTFOUND', 'getaddrinfo') });
    expect(errorFromSdk('anthropic', err).kind).toBe('unreachable');
  });

  test('an ordinary 400 is not a context-length error', () => {
    expect(isContextLengthMessage("Unsupported parameter: 'temperature' is not supported with this model.")).toBe(false);
  });

  test.each([
    [429, undefined, 'rate_limit', true],
    [429, 'insufficient_quota', 'other', false],
    [408, undefined, 'timeout', true],
    [413, undefined, 'context_length', false],
    [401, undefined, 'auth', false],
    [403, undefined, 'auth', false],
    [404, undefined, 'bad_request', false],
    [422, undefined, 'bad_request', false],
    [500, undefined, 'server', true],
    [503, undefined, 'server', true],
    [529, undefined, 'server', true],
  ])('status %d (code %s) is %s, retryable %s', (status, code, kind, retryable) => {
    const err = errorFromStatus('p', status, 'message', { code, retryAfterMs: 5 });

    expect(err).toMatchObject({ kind, retryable, status });
    expect(err.retryAfterMs).toBe(retryable && kind !== 'timeout' ? 5 : undefined);
  });
});
