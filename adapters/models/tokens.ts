/**
 * Token counts for estimates and budget reservations. OpenAI families get a real count
 * with js-tiktoken (o200k_base for the GPT-4o/4.1/5 and o-series, cl100k_base for older
 * GPT-4 and GPT-3.5); npm has no tokenizer for Claude, Gemini, Nova or Llama 4 that runs
 * offline, so those get an approximation, one token per 3 characters, and say so.
 *
 * Why 3: on the bundled pset (LaTeX, Markdown, Python) o200k_base gives 2.9-3.7 characters
 * per token, and the other families' tokenizers are less efficient than o200k on such text,
 * so 3 is a fair middle for an estimate. Reservations use 2 (see promptTokensUpperBound).
 */
import type { ModelEntry } from './registry';
import { providerModule } from './providers';
import type { ProviderTable } from './provider-module';

export type TokenCountMethod = 'tiktoken:o200k_base' | 'tiktoken:cl100k_base' | 'approx:chars/3';

export interface TokenCount {
  tokens: number;
  method: TokenCountMethod;
  /** False for the approximation. */
  exact: boolean;
}

/** Characters per token of the approximation. */
export const APPROX_CHARS_PER_TOKEN = 3;

/**
 * Characters per token assumed for an upper bound when the count is approximate: dense
 * LaTeX and code run to about 2.5 on the less efficient tokenizers, so reserving at 2
 * leaves a margin.
 */
export const UPPER_BOUND_CHARS_PER_TOKEN = 2;

/**
 * Tokens the chat framing adds around a single user message (role markers, message
 * boundaries); small, but counted so that reservations are not short.
 */
const MESSAGE_OVERHEAD_TOKENS = 8;

type Encoding = 'o200k_base' | 'cl100k_base';
interface Encoder {
  encode(text: string, allowedSpecial?: 'all' | string[], disallowedSpecial?: 'all' | string[]): number[];
}
const encoders = new Map<Encoding, Encoder>();

function encoder(name: Encoding): Encoder {
  let enc = encoders.get(name);
  if (!enc) {
    // Loaded on first use: each rank table is a few MB. The subpaths resolve through the
    // package's exports map, which TypeScript's node10 resolution does not read.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Tiktoken } = require('js-tiktoken/lite') as { Tiktoken: new (ranks: unknown) => Encoder };
    // Literal paths, so that a bundler (esbuild for the Lambdas) can follow them.
    const ranks = (
      name === 'o200k_base'
        ? // eslint-disable-next-line @typescript-eslint/no-require-imports
          require('js-tiktoken/ranks/o200k_base')
        : // eslint-disable-next-line @typescript-eslint/no-require-imports
          require('js-tiktoken/ranks/cl100k_base')
    ) as { default?: unknown };
    enc = new Tiktoken(ranks.default ?? ranks);
    encoders.set(name, enc);
  }
  return enc;
}

/** The tokenizer an entry's estimates use: the entry's, else its provider's. */
export function tokenizerFor(entry: Pick<ModelEntry, 'provider' | 'model' | 'tokenizer'>, providers?: ProviderTable): Encoding | 'approx' {
  return entry.tokenizer ?? providerModule(entry.provider, providers).tokenizer(entry);
}

/** Tokens of `text` for this model, and how they were counted. */
export function countTokens(text: string, entry: Pick<ModelEntry, 'provider' | 'model' | 'tokenizer'>, providers?: ProviderTable): TokenCount {
  const tokenizer = tokenizerFor(entry, providers);
  if (tokenizer === 'approx') {
    return { tokens: Math.ceil(text.length / APPROX_CHARS_PER_TOKEN), method: 'approx:chars/3', exact: false };
  }
  // Special-token text inside a paper is counted as plain text, as the APIs do.
  return { tokens: encoder(tokenizer).encode(text, [], []).length, method: `tiktoken:${tokenizer}`, exact: true };
}

/**
 * An upper bound of the prompt tokens a call is billed for, for budget reservations: the
 * exact count plus framing for tiktoken families, else characters / 2 plus framing.
 */
export function promptTokensUpperBound(text: string, entry: Pick<ModelEntry, 'provider' | 'model' | 'tokenizer'>, providers?: ProviderTable): number {
  const c = countTokens(text, entry, providers);
  const tokens = c.exact ? c.tokens : Math.ceil(text.length / UPPER_BOUND_CHARS_PER_TOKEN);
  return tokens + MESSAGE_OVERHEAD_TOKENS;
}

/** A phrase for reports: how the count of `method` was made. */
export function describeTokenCount(method: TokenCountMethod): string {
  return method === 'approx:chars/3'
    ? 'approximate (characters / 3; no offline tokenizer for this family)'
    : `exact (${method.replace('tiktoken:', 'tiktoken ')})`;
}
