/**
 * Turning what a provider or its SDK threw into a ModelError whose kind says whether a
 * retry can help, with the provider's own message kept for the task's record.
 */
import { ModelError, type ModelErrorKind } from '../../core/model';

/** Response headers as the SDKs expose them: a fetch Headers or a plain map. */
export type HeadersLike = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export function header(headers: HeadersLike | undefined | null, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  }
  const map = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(map).find((k) => k.toLowerCase() === name.toLowerCase());
  const v = key === undefined ? undefined : map[key];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The wait the server asked for, in ms: `retry-after-ms` (OpenAI), else `retry-after` as
 * seconds or an HTTP date. Undefined when absent or unreadable.
 */
export function retryAfterMs(headers: HeadersLike | undefined | null, now: number = Date.now()): number | undefined {
  const ms = header(headers, 'retry-after-ms');
  if (ms !== undefined && ms.trim() !== '' && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const ra = header(headers, 'retry-after');
  if (ra === undefined || ra.trim() === '') return undefined;
  if (Number.isFinite(Number(ra))) return Math.max(0, Number(ra) * 1000);
  const date = Date.parse(ra);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Google's RetryInfo in an error body: `"retryDelay": "37s"` or `"1.5s"`. */
export function retryDelayFromGoogleBody(body: string): number | undefined {
  const m = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(body);
  return m ? Math.round(Number(m[1]) * 1000) : undefined;
}

const CONTEXT_LENGTH =
  /context[ _-]?length|context window|maximum context|prompt is too long|input is too long|too many (input )?tokens|exceeds the maximum number of tokens|input token count.*exceeds|reduce the length of the (messages|prompt)/i;

/** Whether a 4xx message says the prompt does not fit the model's context window. */
export function isContextLengthMessage(message: string, code?: string | null): boolean {
  return code === 'context_length_exceeded' || CONTEXT_LENGTH.test(message);
}

/** Classify an HTTP error status with the provider's message. */
export function errorFromStatus(provider: string, status: number, message: string, opts: { retryAfterMs?: number; code?: string | null } = {}): ModelError {
  const text = `${provider} ${status}: ${message}`.trim();
  let kind: ModelErrorKind;
  if (status === 429) {
    // OpenAI's exhausted credit is a 429 that no wait will cure.
    kind = opts.code === 'insufficient_quota' ? 'other' : 'rate_limit';
  } else if (status === 408) kind = 'timeout';
  else if (status === 413) kind = 'context_length';
  else if (status === 401 || status === 403) kind = 'auth';
  else if (status >= 500) kind = 'server';
  else if (status >= 400) kind = isContextLengthMessage(message, opts.code) ? 'context_length' : 'bad_request';
  else kind = 'other';
  return new ModelError(kind, text, status, kind === 'rate_limit' || kind === 'server' ? opts.retryAfterMs : undefined);
}

/**
 * Failures that happen before a connection exists, so no byte of the request was written
 * and nothing can be billed: name resolution, a refused or timed-out connect, a TLS
 * handshake that failed (the request is only written once the handshake is done; a reused
 * connection has no handshake to fail).
 */
const UNREACHABLE_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NONAME',
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'HOSTNAME_MISMATCH',
]);
const UNREACHABLE_CODE_PREFIXES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_)/;
/** System calls whose failure means the connection was never made. */
const CONNECT_SYSCALLS = new Set(['getaddrinfo', 'connect']);

function isUnreachable(code: string, syscall: unknown): boolean {
  return UNREACHABLE_CODES.has(code) || UNREACHABLE_CODE_PREFIXES.test(code) || (typeof syscall === 'string' && CONNECT_SYSCALLS.has(syscall));
}

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ERR_HTTP2_STREAM_ERROR',
  'ERR_HTTP2_SESSION_ERROR',
  'ERR_HTTP2_GOAWAY_SESSION',
  'ERR_HTTP2_STREAM_CANCEL',
  'ERR_STREAM_PREMATURE_CLOSE',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Classify an error raised below HTTP (connection reset, DNS, timeouts) or while reading
 * the body (unparsable JSON), following `cause` chains. Undefined when it is none of these.
 * A failure before the connection existed is `unreachable` (never billed); one after it
 * may have reached the provider and is `network` or `timeout`.
 */
export function errorFromTransport(provider: string, err: unknown): ModelError | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ModelError) return e;
    const code = (e as { code?: unknown }).code;
    const name = (e as { name?: unknown }).name;
    const message = String((e as { message?: unknown }).message ?? e);
    if (typeof code === 'string' && isUnreachable(code, (e as { syscall?: unknown }).syscall)) {
      return new ModelError('unreachable', `${provider}: not sent (${code}): ${message}`);
    }
    if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return new ModelError('timeout', `${provider}: timed out (${code})`);
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return new ModelError('network', `${provider}: ${code}: ${message}`);
    if (name === 'TimeoutError') return new ModelError('timeout', `${provider}: timed out: ${message}`);
    // Some wrappers keep only the text of the original error ("AWS SDK error wrapper for
    // Error [ERR_HTTP2_STREAM_ERROR]: ..."): find the code there.
    const quoted = /\b(E[A-Z0-9_]{3,})\b/.exec(message)?.[1];
    if (quoted && UNREACHABLE_CODES.has(quoted)) return new ModelError('unreachable', `${provider}: not sent (${quoted}): ${message}`);
    if (quoted && NETWORK_CODES.has(quoted)) return new ModelError('network', `${provider}: ${quoted}: ${message}`);
    if (quoted && TIMEOUT_CODES.has(quoted)) return new ModelError('timeout', `${provider}: timed out (${quoted})`);
    if (name === 'SyntaxError') return new ModelError('malformed_response', `${provider}: unparsable response: ${message}`);
  }
  return undefined;
}

/** A response that parsed but lacks what the wire format promises. */
export function malformed(provider: string, what: string): ModelError {
  return new ModelError('malformed_response', `${provider}: malformed response: ${what}`);
}

/** The caller aborted: such errors pass through unclassified so that nothing retries them. */
export function isCallerAbort(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

export function asRecord(x: unknown): Record<string, unknown> | undefined {
  return typeof x === 'object' && x !== null && !Array.isArray(x) ? (x as Record<string, unknown>) : undefined;
}

/** A non-negative integer count from a usage field, 0 when absent. */
export function count(x: unknown): number {
  return typeof x === 'number' && Number.isFinite(x) && x > 0 ? Math.round(x) : 0;
}

/**
 * A per-call deadline merged with the caller's signal. The SDKs' own timeouts stop at the
 * response headers; this one also covers a body that stalls. `timedOut` tells our abort
 * from the caller's.
 */
export interface Deadline {
  signal: AbortSignal;
  timedOut(): boolean;
  dispose(): void;
}

export function deadline(timeoutMs: number, callerSignal?: AbortSignal): Deadline {
  const controller = new AbortController();
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    controller.abort(new ModelError('timeout', `timed out after ${timeoutMs} ms`));
  }, timeoutMs);
  const onAbort = (): void => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) controller.abort(callerSignal.reason);
  else callerSignal?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => fired,
    dispose: () => {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * Map an error from a Stainless-generated SDK (openai, @anthropic-ai/sdk). Caller aborts,
 * ModelErrors and our own deadline are handled before, by ProviderClient.withDeadline.
 */
export function errorFromSdk(provider: string, err: unknown): ModelError {
  const e = asRecord(err) ?? {};
  const name = String(e.constructor && (e.constructor as { name?: string }).name);
  if (name === 'APIConnectionTimeoutError') return new ModelError('timeout', `${provider}: request timed out`);
  const status = typeof e.status === 'number' ? e.status : undefined;
  if (status !== undefined) {
    const body = asRecord(e.error);
    const inner = asRecord(body?.error) ?? body;
    const message = typeof inner?.message === 'string' ? inner.message : String(e.message ?? '');
    const code = typeof inner?.code === 'string' ? inner.code : typeof e.code === 'string' ? e.code : undefined;
    return errorFromStatus(provider, status, message, { retryAfterMs: retryAfterMs(e.headers as HeadersLike | undefined), code });
  }
  const transport = errorFromTransport(provider, err);
  if (transport) return transport;
  if (name === 'APIConnectionError') return new ModelError('network', `${provider}: connection error: ${String(e.message ?? err)}`);
  return new ModelError('other', `${provider}: ${err instanceof Error ? err.message : String(err)}`);
}
