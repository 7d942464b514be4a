/**
 * The model registry: resources/models.yaml shipped with rcb, with a user file
 * (`--models-file`, same format) merged over it by id. A user entry with a known id only
 * needs the fields it changes (`params`, `prices` and `rate` merge key by key); a new id
 * needs a whole entry. Every entry is validated once, here, and an error names the file
 * and the entry.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { CacheMode, ModelPrices } from '../../core/cost';
import { resourcePath } from '../../core/util/package-root';

import { PROVIDER_MODULES, PROVIDERS, providerModule, type Provider } from './providers';
import type { ProviderTable } from './provider-module';

export { PROVIDERS, type Provider };

const price = z.number().nonnegative().finite();
const isoDay = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
  .or(z.date().transform((d) => d.toISOString().slice(0, 10)));

const priceTier = z.object({ input: price, cached_input: price, output: price, cache_write: price.optional() }).strict();

const longContextTier = priceTier.extend({ threshold_tokens: z.number().int().positive() }).strict();

/** Batch prices are dated and sourced on their own: providers change them apart from the interactive ones. */
const batchPricesSchema = priceTier.extend({ as_of: isoDay, source: z.string().min(1), long_context: longContextTier.optional() }).strict();

const pricesSchema = priceTier
  .extend({
    as_of: isoDay,
    source: z.string().optional(),
    long_context: longContextTier.optional(),
    batch: batchPricesSchema.optional(),
  })
  .strict();

const paramsSchema = z
  .object({
    max_output_tokens: z.number().int().positive(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().gt(0).max(1).optional(),
    seed: z.number().int().optional(),
    /** OpenAI reasoning effort; on Gemini 3 it becomes the thinking level. */
    reasoning_effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).optional(),
    /** Thinking budget in tokens: Anthropic extended thinking, Gemini 2.5 thinkingBudget. */
    thinking_budget: z.number().int().min(-1).optional(),
    /** Extra request fields passed through as they are (OpenRouter routing, vLLM options, ...). */
    extra_body: z.record(z.unknown()).optional(),
  })
  .strict();

const rateSchema = z
  .object({
    max_in_flight: z.number().int().positive().optional(),
    rpm: z.number().positive().optional(),
    tpm: z.number().positive().optional(),
  })
  .strict();

/** The entry schema over a provider table: `provider` must name one of its modules. */
function makeEntrySchema(providers: ProviderTable) {
  const names = Object.keys(providers) as [string, ...string[]];
  return z
    .object({
      id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/, 'must be letters, digits and . _ : / @ + -'),
      provider: z.enum(names),
      /** The model's name in the provider's API. */
      model: z.string().min(1),
      base_url: z.string().url().optional(),
      api_key_env: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
        .optional(),
      /** AWS region (Bedrock). */
      region: z.string().optional(),
      /** Bedrock batch inference: where its input and output JSONL go (s3://bucket/prefix). */
      batch_s3_uri: z
        .string()
        .regex(/^s3:\/\/[^/]+(\/.*)?$/, 'must be s3://bucket[/prefix]')
        .optional(),
      /** Bedrock batch inference: the service role Bedrock assumes to read and write batch_s3_uri. */
      batch_role_arn: z
        .string()
        .regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/, 'must be an IAM role ARN')
        .optional(),
      params: paramsSchema,
      prices: pricesSchema,
      knowledge_cutoff: z
        .string()
        .regex(/^\d{4}-\d{2}$/, 'must be YYYY-MM')
        .or(z.date().transform((d) => d.toISOString().slice(0, 7))),
      context_window: z.number().int().positive(),
      rate: rateSchema.optional(),
      /**
       * Typical seconds of one call (the generator's billed wait, Lambda GB-seconds); default
       * DEFAULT_INFRA_ASSUMPTIONS.modelCallSec (docs/cloud.md "What a run costs in infrastructure").
       */
      call_sec: z.number().positive().max(900).optional(),
      /** Mark the shared prefix for caching (Anthropic cache_control, Bedrock cachePoint). Default: on for anthropic, off elsewhere. */
      prompt_cache: z.boolean().optional(),
      /** Shortest prefix the provider caches, tokens; default by provider (see cachePlanFor). */
      cache_min_tokens: z.number().int().nonnegative().optional(),
      /** Tokenizer for estimates; default by provider (o200k_base for OpenAI, an approximation elsewhere). */
      tokenizer: z.enum(['o200k_base', 'cl100k_base', 'approx']).optional(),
      description: z.string().optional(),
      /**
       * Long calls (ones that may outlast a Lambda): never one long request, but through the
       * batch lane, where no Lambda waits: the provider's background mode (OpenAI Responses,
       * interactive prices) or else its batch API (Anthropic, Gemini, Bedrock: batch prices).
       */
      slow: z.boolean().optional(),
    })
    .strict()
    .superRefine((e, ctx) => {
      const slowProblem = e.slow ? longCallProblem(e as ModelEntry, providers) : undefined;
      if (slowProblem) ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['slow'], message: slowProblem });
      if (e.provider === 'openai-compatible' && !e.base_url) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['base_url'], message: 'is required for provider openai-compatible' });
      }
      if ((e.provider === 'anthropic' || e.model.includes('anthropic.')) && (e.params.temperature ?? 0) > 1) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['params', 'temperature'], message: 'must be between 0 and 1 for Claude' });
      }
      if (e.params.max_output_tokens >= e.context_window) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['params', 'max_output_tokens'], message: `must be below context_window (${e.context_window})` });
      }
    });
}

const SCHEMAS = new WeakMap<ProviderTable, ReturnType<typeof makeEntrySchema>>();

function entrySchemaFor(providers: ProviderTable = PROVIDER_MODULES): ReturnType<typeof makeEntrySchema> {
  let schema = SCHEMAS.get(providers);
  if (!schema) SCHEMAS.set(providers, (schema = makeEntrySchema(providers)));
  return schema;
}

export type ModelParams = z.infer<typeof paramsSchema>;
export type ModelRate = z.infer<typeof rateSchema>;

/** One model as rcb knows it. */
export interface ModelEntry {
  /** rcb's id for the model (what `--models` takes). */
  id: string;
  /** A provider of PROVIDER_MODULES (or of the table the entry was validated with). */
  provider: Provider | (string & {});
  /** The API's name for the model. */
  model: string;
  base_url?: string;
  /** Environment variable (or secret name) holding the API key; providers have defaults. */
  api_key_env?: string;
  region?: string;
  batch_s3_uri?: string;
  batch_role_arn?: string;
  params: ModelParams;
  prices: ModelPrices;
  /** `YYYY-MM`. */
  knowledge_cutoff: string;
  context_window: number;
  rate?: ModelRate;
  /** Typical seconds of one call (the estimate's Lambda GB-seconds). */
  call_sec?: number;
  prompt_cache?: boolean;
  cache_min_tokens?: number;
  tokenizer?: 'o200k_base' | 'cl100k_base' | 'approx';
  description?: string;
  /** Long calls: through the batch lane, in the provider's background mode or its batch API (longCallPath). */
  slow?: boolean;
}

/** A registry file that cannot be used; the message names the file and the entry. */
export class RegistryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistryError';
  }
}

export interface LoadRegistryOptions {
  /** The user's file, merged over the shipped one. */
  userFile?: string;
  /** The shipped registry. @default resources/models.yaml */
  shippedFile?: string;
  /** The providers an entry may name. @default PROVIDER_MODULES */
  providers?: ProviderTable;
}

/** Load the shipped registry and merge the user's file over it. */
export function loadRegistry(opts: LoadRegistryOptions = {}): ModelEntry[] {
  const shippedFile = opts.shippedFile ?? resourcePath('models.yaml');
  const shipped = readEntries(shippedFile);
  const merged = new Map<string, { raw: Record<string, unknown>; origin: string }>();
  for (const { raw, index } of shipped) merged.set(raw.id as string, { raw, origin: `${shippedFile}: models[${index}]` });
  if (opts.userFile) {
    for (const { raw, index } of readEntries(opts.userFile)) {
      const id = raw.id as string;
      const base = merged.get(id);
      merged.set(id, {
        raw: base ? mergeEntry(base.raw, raw) : raw,
        origin: base ? `${opts.userFile}: models[${index}] (merged over ${base.origin})` : `${opts.userFile}: models[${index}]`,
      });
    }
  }
  const problems: string[] = [];
  const entries: ModelEntry[] = [];
  for (const [id, { raw, origin }] of merged) {
    const parsed = entrySchemaFor(opts.providers).safeParse(raw);
    if (parsed.success) entries.push(parsed.data as ModelEntry);
    else problems.push(...parsed.error.issues.map((i) => `${origin} (id "${id}"): ${formatPath(i.path)}${i.message}`));
  }
  if (problems.length > 0) throw new RegistryError(`invalid model registry:\n  ${problems.join('\n  ')}`);
  return entries;
}

/** Validate one entry given in code (tests, programmatic use). */
export function parseModelEntry(raw: unknown, origin = 'entry', providers?: ProviderTable): ModelEntry {
  const parsed = entrySchemaFor(providers).safeParse(raw);
  if (!parsed.success) {
    throw new RegistryError(`${origin}: ${parsed.error.issues.map((i) => `${formatPath(i.path)}${i.message}`).join('; ')}`);
  }
  return parsed.data as ModelEntry;
}

/** The entry with this id, or an error listing the known ids. */
export function findModel(entries: ModelEntry[], id: string): ModelEntry {
  const entry = entries.find((e) => e.id === id);
  if (!entry) throw new RegistryError(`unknown model "${id}"; known models: ${entries.map((e) => e.id).join(', ')}`);
  return entry;
}

/** The `rcb models` listing: one row per model, prices in USD per 1M tokens. */
export function formatModelList(entries: ModelEntry[]): string {
  const header = ['ID', 'PROVIDER', 'MODEL', 'IN $/M', 'CACHED $/M', 'OUT $/M', 'CUTOFF', 'CONTEXT', 'PRICES AS OF', 'BATCH IN/OUT $/M'];
  const rows = entries.map((e) => [
    e.id,
    e.provider,
    e.model,
    money(e.prices.input),
    money(e.prices.cached_input),
    money(e.prices.output),
    e.knowledge_cutoff,
    contextSize(e.context_window),
    e.prices.as_of,
    supportsBatch(e) ? `${money(e.prices.batch!.input)}/${money(e.prices.batch!.output)} (${e.prices.batch!.as_of})` : '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const numeric = new Set([3, 4, 5, 7]);
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (numeric.has(i) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/** Whether the entry can go through its provider's batch API: the provider has one and the entry has batch prices. */
export function supportsBatch(entry: ModelEntry, providers?: ProviderTable): boolean {
  return batchProblem(entry, providers) === undefined;
}

/** Why the entry cannot go through a batch API, or undefined when it can. */
export function batchProblem(entry: ModelEntry, providers?: ProviderTable): string | undefined {
  const provider = providerModule(entry.provider, providers);
  if (provider.batchWindowHours === undefined) return `provider ${entry.provider} has no batch API`;
  if (!entry.prices.batch) return 'no batch prices (prices.batch) in the registry';
  return provider.batchRequirement?.(entry);
}

/**
 * How a slow entry's long calls go, by its provider module: `background` (each request
 * started, then polled: OpenAI Responses, at interactive prices) where the module has a
 * background client, else `batch` (the provider's batch API at its batch prices: Anthropic
 * Message Batches, Gemini batch mode, Bedrock batch inference). Both run in the batch lane,
 * which no Lambda waits on. Undefined when the entry can take neither.
 */
export type LongCallPath = 'background' | 'batch';

export function longCallPath(entry: ModelEntry, providers?: ProviderTable): LongCallPath | undefined {
  if (providerModule(entry.provider, providers).createBackgroundClient) return 'background';
  return supportsBatch(entry, providers) ? 'batch' : undefined;
}

/** Why a `slow: true` entry has no long-call path (the registry's message for `slow`), or undefined. */
export function longCallProblem(entry: ModelEntry, providers?: ProviderTable): string | undefined {
  if (longCallPath(entry, providers)) return undefined;
  return `needs a provider with a background mode (openai-responses) or a batch API for its long calls; ${entry.provider}: ${batchProblem(entry, providers)}`;
}

/** How an entry's shared prefix is cached, for `rcb estimate`: the entry's settings over its provider's. */
export function cachePlanFor(entry: ModelEntry, providers?: ProviderTable): { mode: CacheMode; minTokens: number } {
  const provider = providerModule(entry.provider, providers);
  return { mode: provider.cacheMode(entry), minTokens: entry.cache_min_tokens ?? provider.cacheMinTokens };
}

function readEntries(file: string): Array<{ raw: Record<string, unknown>; index: number }> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new RegistryError(`${file}: cannot read: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new RegistryError(`${file}: not valid YAML: ${(e as Error).message}`);
  }
  const list = isRecord(doc) ? doc.models : undefined;
  if (!Array.isArray(list)) throw new RegistryError(`${file}: expected a top-level "models:" list`);
  const seen = new Set<string>();
  return list.map((raw, index) => {
    if (!isRecord(raw) || typeof raw.id !== 'string' || raw.id === '') {
      throw new RegistryError(`${file}: models[${index}]: every entry needs a string "id"`);
    }
    if (seen.has(raw.id)) throw new RegistryError(`${file}: models[${index}]: duplicate id "${raw.id}"`);
    seen.add(raw.id);
    return { raw, index };
  });
}

/** User fields over shipped ones; the nested maps (params, prices, rate) merge key by key. */
function mergeEntry(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = (k === 'params' || k === 'prices' || k === 'rate') && isRecord(v) && isRecord(base[k]) ? { ...(base[k] as object), ...v } : v;
  }
  return out;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function formatPath(path: Array<string | number>): string {
  return path.length ? `${path.join('.')}: ` : '';
}

/** At least two decimals, more only where the price has them (0.075). */
function money(x: number): string {
  const [int, frac = ''] = x.toFixed(4).replace(/0+$/, '').split('.');
  return `${int}.${frac.padEnd(2, '0')}`;
}

function contextSize(n: number): string {
  return n >= 1_000_000 ? `${+(n / 1_000_000).toFixed(2)}M` : `${Math.round(n / 1000)}K`;
}
