/**
 * The fake model registry of the tests, in one place: registry entries (raw, as a
 * `--models-file` would hold them) of each provider pointed at a local fake server, with
 * interactive and batch prices, and a local run (SQLite store and batch ledger on one file,
 * its run item created) for the batch lane's tests. The model, provider and store tests
 * (test/models/*, test/infra/task-role-coverage) build theirs from here instead of
 * writing an entry and a run item out again.
 */
import { join } from 'node:path';
import type { RunSpec } from '../../core/records';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { SqliteBatchLedger } from '../../adapters/local/sqlite-batch-ledger';
import { tempDir } from './cli';

/** Providers with a fake server of their API in fakes/fake-batch-servers.ts. */
export type FakeProvider = 'openai' | 'openai-responses' | 'anthropic' | 'gemini' | 'bedrock';

/** The sources the batch prices are dated from, as resources/models.yaml cites them. */
const BATCH_SOURCE: Record<FakeProvider, string> = {
  openai: 'https://developers.openai.com/api/docs/pricing',
  'openai-responses': 'https://developers.openai.com/api/docs/pricing',
  anthropic: 'https://platform.claude.com/docs/en/build-with-claude/batch-processing',
  gemini: 'https://ai.google.dev/gemini-api/docs/batch-api',
  bedrock: 'https://aws.amazon.com/bedrock/pricing/',
};

/** The S3 location and role of a Bedrock entry's batch jobs (the bucket the Bedrock tests create in s3rver). */
export const BEDROCK_BATCH = {
  bucket: 'rcb-bedrock-batch',
  batch_s3_uri: 's3://rcb-bedrock-batch/rcb-batches',
  batch_role_arn: 'arn:aws:iam::123456789012:role/rcb-bedrock-batch',
} as const;

/**
 * A registry entry of `provider` on the fake server at `url` (raw: parseModelEntry or a
 * models file validates it), with interactive prices and batch prices at half of them;
 * `over` replaces fields whole.
 */
export function fakeEntry(provider: FakeProvider, url: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<FakeProvider, Record<string, unknown>> = {
    openai: {
      id: 'fake-gpt',
      model: 'gpt-fake',
      base_url: `${url}/v1`,
      params: { max_output_tokens: 2000, temperature: 0 },
      prices: prices(provider, { input: 2, cached_input: 0.5, output: 8 }),
      knowledge_cutoff: '2024-06',
      context_window: 1000000,
    },
    'openai-responses': {
      id: 'fake-gpt-r',
      model: 'gpt-fake-r',
      base_url: `${url}/v1`,
      params: { max_output_tokens: 2000, reasoning_effort: 'low' },
      prices: prices(provider, { input: 2, cached_input: 0.5, output: 8 }),
      knowledge_cutoff: '2024-06',
      context_window: 1000000,
    },
    anthropic: {
      id: 'fake-claude',
      model: 'claude-fake',
      base_url: url,
      params: { max_output_tokens: 2000, temperature: 0 },
      prices: prices(provider, { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15 }),
      knowledge_cutoff: '2025-08',
      context_window: 200000,
    },
    gemini: {
      id: 'fake-gemini',
      model: 'gemini-fake',
      base_url: url,
      params: { max_output_tokens: 2000, temperature: 0 },
      prices: prices(provider, { input: 0.3, cached_input: 0.03, output: 2.5 }),
      knowledge_cutoff: '2025-01',
      context_window: 1048576,
    },
    bedrock: {
      id: 'fake-nova',
      model: 'us.amazon.nova-fake-v1:0',
      base_url: url,
      region: 'us-east-1',
      batch_s3_uri: BEDROCK_BATCH.batch_s3_uri,
      batch_role_arn: BEDROCK_BATCH.batch_role_arn,
      params: { max_output_tokens: 2000, temperature: 0 },
      prices: prices(provider, { input: 0.8, cached_input: 0.2, output: 3.2 }),
      knowledge_cutoff: '2024-10',
      context_window: 300000,
    },
  };
  return { provider, ...base[provider], ...over };
}

/** Interactive prices and the batch tier at half of each. */
function prices(provider: FakeProvider, p: { input: number; cached_input: number; output: number; cache_write?: number }): Record<string, unknown> {
  const half = Object.fromEntries(Object.entries(p).map(([k, v]) => [k, v / 2]));
  return { ...p, as_of: '2026-12-01', batch: { ...half, as_of: '2026-12-01', source: BATCH_SOURCE[provider] } };
}

/** The environment variable and test key each fake provider is called with. */
export const FAKE_KEYS: Record<FakeProvider, Record<string, string>> = {
  openai: { OPENAI_API_KEY: 'test-key' },
  'openai-responses': { OPENAI_API_KEY: 'test-key' },
  anthropic: { ANTHROPIC_API_KEY: 'test-key' },
  gemini: { GEMINI_API_KEY: 'test-key' },
  bedrock: {},
};

/** The run item of a run that is generating, nothing spent: what generation tests start from. */
export async function createGeneratingRun(store: Pick<SqliteRunStore, 'createRun'>, runId: string, spec: RunSpec): Promise<void> {
  const stamp = new Date().toISOString();
  await store.createRun({
    runId,
    spec,
    source: 'rcb',
    papers: [],
    models: {},
    status: 'generating',
    createdAt: stamp,
    updatedAt: stamp,
    spentUsd: 0,
    reservedUsd: 0,
  });
}

/** A local run of `spec` in a fresh run directory: its store and batch ledger on one SQLite file, its run item `r` generating. */
export async function openLocalRun(spec: RunSpec, opts: { prefix?: string; runId?: string; file?: string } = {}) {
  const runId = opts.runId ?? 'r';
  const file = opts.file ?? join(tempDir(opts.prefix ?? 'rcb-run-'), 'rcb.sqlite');
  const store = new SqliteRunStore(file);
  const ledger = new SqliteBatchLedger(file);
  await createGeneratingRun(store, runId, spec);
  const close = async (): Promise<void> => {
    await store.close();
    ledger.close();
  };
  return { runId, file, store, ledger, close };
}

/** A run spec of these models over a pset and template, one sample each, no budget; `over` replaces fields. */
export function fakeRunSpec(pset: { digest: string }, template: { digest: string }, models: RunSpec['models'], over: Partial<RunSpec> = {}): RunSpec {
  return {
    psetDigest: pset.digest,
    psetRoot: '',
    models,
    samples: 1,
    withPaper: true,
    papers: ['adamlite'],
    promptTemplateDigest: template.digest,
    timeoutSec: 60,
    budgetUsd: null,
    ...over,
  };
}
