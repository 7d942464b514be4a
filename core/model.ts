/**
 * The ModelClient port: a prompt in, text and token usage out, with typed errors that say
 * whether a retry can help. Providers live in adapters/models/.
 */
import type { TokenUsage } from './types';

/** A prompt whose first `sharedPrefixChars` characters are the same for every task of a paper. */
export interface Prompt {
  text: string;
  /** Length of the prefix shared by a paper's tasks (instructions + paper): cacheable. */
  sharedPrefixChars: number;
}

export interface ModelRequest {
  prompt: Prompt;
  /** Sample index, so offline models can answer per sample; providers ignore it. */
  sample: number;
  /** Identity of the task asked about; offline models (oracle, replay) answer by it. */
  task: { paper: string; file: string; snippet: string };
  signal?: AbortSignal;
  /**
   * Called before a retry layer tries the request again after `error`; throwing ends the
   * call with that error. The caller's budget hook: an attempt that timed out or broke off
   * may still be billed, so the next one must be reserved for first.
   */
  beforeRetry?: (error: ModelError) => Promise<void>;
}

export type FinishReason = 'stop' | 'length' | 'content_filter' | 'other';

export interface ModelResponse {
  /** The raw answer text (fences and prose included). */
  text: string;
  usage: TokenUsage;
  finishReason: FinishReason;
  /** The model name the provider reported, when it did. */
  providerModel?: string;
}

export type ModelErrorKind =
  | 'rate_limit'
  | 'server'
  | 'timeout'
  | 'network'
  /**
   * The request provably never reached the provider: DNS failure, connection refused, no
   * route, TLS handshake failure or connect timeout, all before a byte of the request was
   * written. Retryable, and never billed.
   */
  | 'unreachable'
  | 'bad_request'
  | 'auth'
  | 'context_length'
  | 'malformed_response'
  | 'other';

/**
 * Failures after which the provider may still bill the attempt (the answer may have been
 * generated). `unreachable` is not among them: such a request was never written.
 */
export const MAYBE_BILLED: ReadonlySet<ModelErrorKind> = new Set(['timeout', 'network', 'malformed_response']);

const RETRYABLE: ReadonlySet<ModelErrorKind> = new Set(['rate_limit', 'server', 'timeout', 'network', 'unreachable', 'malformed_response']);

/** A failed model call, classified. */
export class ModelError extends Error {
  readonly retryable: boolean;
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    readonly status?: number,
    /** Server-given wait before retrying (Retry-After), milliseconds. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ModelError';
    this.retryable = RETRYABLE.has(kind);
  }
}

export interface ModelClient {
  /** The rcb model id (registry id, `oracle`, `empty`, or the replayed model's name). */
  readonly id: string;
  /** Parameters that change answers (temperature, max tokens, ...): part of the task id. */
  readonly params: Record<string, unknown>;
  /** True for offline models that cost nothing and need no budget or rate control. */
  readonly offline: boolean;
  complete(req: ModelRequest): Promise<ModelResponse>;
}
