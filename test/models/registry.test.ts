import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachePlanFor, findModel, formatModelList, loadRegistry, PROVIDERS, RegistryError, supportsBatch, batchProblem } from '../../adapters/models/registry';

function userFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'rcb-models-'));
  const file = join(dir, 'my-models.yaml');
  writeFileSync(file, text);
  return file;
}

function loadError(text: string): string {
  try {
    loadRegistry({ userFile: userFile(text) });
  } catch (e) {
    expect(e).toBeInstanceOf(RegistryError);
    return (e as Error).message;
  }
  throw new Error('expected the registry to be refused');
}

describe('model registry', () => {
  test('every shipped model carries what reports show: display name, developer, openness, cutoff', () => {
    for (const e of loadRegistry()) {
      expect([e.id, typeof e.display_name, typeof e.developer, typeof e.open]).toEqual([e.id, 'string', 'string', 'boolean']);
      expect(e.knowledge_cutoff).toMatch(/^\d{4}-\d{2}$/);
    }
  });

  test('the shipped registry is valid and covers every provider', () => {
    const entries = loadRegistry();

    expect(new Set(entries.map((e) => e.provider))).toEqual(new Set(PROVIDERS));
    for (const e of entries) {
      expect(e.prices.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(e.prices.source).toMatch(/^https:\/\//);
      expect(e.knowledge_cutoff).toMatch(/^\d{4}-\d{2}$/);
      expect(e.prices.input).toBeGreaterThan(0);
      expect(e.prices.cached_input).toBeLessThanOrEqual(e.prices.input);
    }
  });

  test('a user entry with a known id changes only the fields it gives', () => {
    const shipped = findModel(loadRegistry(), 'claude-sonnet-4.6');
    const file = userFile(`models:
  - id: claude-sonnet-4.6
    params: { temperature: 0.7 }
    prices: { output: 14, as_of: "2026-12-01" }
    rate: { rpm: 50, tpm: 400000 }
`);

    const merged = findModel(loadRegistry({ userFile: file }), 'claude-sonnet-4.6');

    expect(merged.params).toEqual({ ...shipped.params, temperature: 0.7 });
    expect(merged.prices).toEqual({ ...shipped.prices, output: 14, as_of: '2026-12-01' });
    expect(merged.rate).toEqual({ max_in_flight: shipped.rate?.max_in_flight, rpm: 50, tpm: 400000 });
    expect(merged.model).toBe(shipped.model);
  });

  test('a user entry with a new id is added', () => {
    const file = userFile(`models:
  - id: local-qwen
    provider: openai-compatible
    model: Qwen/Qwen3-32B
    base_url: http://127.0.0.1:8000/v1
    params: { max_output_tokens: 4096, temperature: 0 }
    prices: { input: 0, cached_input: 0, output: 0, as_of: "2026-11-29" }
    knowledge_cutoff: "2024-12"
    context_window: 32768
`);

    const entries = loadRegistry({ userFile: file });

    expect(findModel(entries, 'local-qwen')).toMatchObject({ provider: 'openai-compatible', base_url: 'http://127.0.0.1:8000/v1' });
    expect(entries.length).toBe(loadRegistry().length + 1);
  });

  test('an invalid entry is refused with the file, the entry and the field', () => {
    const message = loadError(`models:
  - id: broken
    provider: openai
    model: gpt-x
    params: { max_output_tokens: 100 }
    prices: { input: 1, cached_input: 0.1, output: 2, as_of: "last week" }
    knowledge_cutoff: "2025"
    context_window: 1000
`);

    expect(message).toContain('my-models.yaml: models[0]');
    expect(message).toContain('id "broken"');
    expect(message).toContain('prices.as_of: must be a date YYYY-MM-DD');
    expect(message).toContain('knowledge_cutoff: must be YYYY-MM');
  });

  test('batch prices need their own date and source page', () => {
    const message = loadError(`models:
  - id: claude-haiku-4.5
    prices: { batch: { input: 0.5, cached_input: 0.05, output: 2.5 } }
`);

    expect(message).toContain('id "claude-haiku-4.5"');
    expect(message).toContain('prices.batch.as_of: ');
    expect(message).toContain('prices.batch.source: Required');
  });

  test('every shipped model with batch prices is one its provider can batch, and says where the prices come from', () => {
    const batched = loadRegistry().filter((e) => e.prices.batch);

    expect(batched.length).toBeGreaterThanOrEqual(10);
    for (const e of batched) {
      // Bedrock also needs the user's S3 location and service role.
      expect(supportsBatch(e)).toBe(e.provider !== 'bedrock');
      expect(supportsBatch({ ...e, batch_s3_uri: 's3://b/p', batch_role_arn: 'arn:aws:iam::123456789012:role/r' })).toBe(true);
      expect(e.prices.batch!.source).toMatch(/^https:\/\//);
      expect(e.prices.batch!.input).toBeLessThan(e.prices.input);
    }
    expect(batchProblem(findModel(loadRegistry(), 'bedrock-nova-pro'))).toMatch(/batch_s3_uri and batch_role_arn/);
    expect(batchProblem(findModel(loadRegistry(), 'deepseek-chat'))).toMatch(/has no batch API/);
    expect(batchProblem({ ...findModel(loadRegistry(), 'gpt-4.1'), prices: { ...findModel(loadRegistry(), 'gpt-4.1').prices, batch: undefined } })).toMatch(
      /no batch prices/,
    );
  });

  test('a misspelt field is refused rather than ignored', () => {
    const message = loadError(`models:
  - id: gpt-5.4
    params: { max_tokens: 100 }
`);

    expect(message).toMatch(/params: Unrecognized key\(s\) in object: 'max_tokens'/);
    expect(message).toContain('merged over');
  });

  test('an openai-compatible entry needs a base_url', () => {
    const message = loadError(`models:
  - id: nowhere
    provider: openai-compatible
    model: m
    params: { max_output_tokens: 100 }
    prices: { input: 1, cached_input: 1, output: 1, as_of: "2026-11-29" }
    knowledge_cutoff: "2025-01"
    context_window: 1000
`);

    expect(message).toContain('base_url: is required for provider openai-compatible');
  });

  test('a file without a models list is refused by name', () => {
    expect(loadError('gpt: 1\n')).toMatch(/my-models\.yaml: expected a top-level "models:" list/);
  });

  test('the listing has one row per model with its prices, cutoff and price date', () => {
    const entries = loadRegistry();

    const lines = formatModelList(entries).trimEnd().split('\n');

    expect(lines[0]).toMatch(/^ID\s+PROVIDER\s+MODEL\s+IN \$\/M\s+CACHED \$\/M\s+OUT \$\/M\s+CUTOFF\s+CONTEXT\s+PRICES AS OF\s+BATCH IN\/OUT \$\/M$/);
    expect(lines).toHaveLength(entries.length + 1);
    const sonnet = lines.find((l) => l.startsWith('claude-sonnet-4.6 '));
    expect(sonnet).toMatch(/claude-sonnet-4-6\s+3\.00\s+0\.30\s+15\.00\s+2025-08\s+1M\s+2026-11-29\s+1\.50\/7\.50 \(2026-12-01\)$/);
    expect(lines.find((l) => l.startsWith('deepseek-chat '))).toMatch(/\s-$/);
  });

  test('an unknown id is an error that lists the known ones', () => {
    expect(() => findModel(loadRegistry(), 'gpt-9')).toThrow(/unknown model "gpt-9"; known models: gpt-5.4, /);
  });

  test('the cache plan follows the provider: explicit for Anthropic, automatic for OpenAI and Gemini', () => {
    const entries = loadRegistry();

    expect(cachePlanFor(findModel(entries, 'claude-haiku-4.5'))).toEqual({ mode: 'explicit', minTokens: 1024 });
    expect(cachePlanFor(findModel(entries, 'gpt-5.4'))).toEqual({ mode: 'automatic', minTokens: 1024 });
    expect(cachePlanFor(findModel(entries, 'gemini-2.5-flash'))).toEqual({ mode: 'automatic', minTokens: 2048 });
    expect(cachePlanFor(findModel(entries, 'bedrock-claude-sonnet-4.6')).mode).toBe('explicit');
  });
});
