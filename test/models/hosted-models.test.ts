import { staticKeySource } from '../../core/keys';
import { costOf, worstCaseCost } from '../../core/cost';
import { ModelError } from '../../core/model';
import { costModelFor, HostedModels } from '../../adapters/models/hosted-models';
import { findModel, loadRegistry, parseModelEntry } from '../../adapters/models/registry';
import { promptTokensUpperBound } from '../../adapters/models/tokens';
import { request } from './support/provider-contract';
import { startFakeProvider, type FakeProvider } from './support/fake-provider';

const registry = loadRegistry();

describe('hosted models for a run', () => {
  let server: FakeProvider;
  beforeAll(async () => {
    server = await startFakeProvider(() => ({
      body: {
        id: 'c',
        object: 'chat.completion',
        model: 'qwen',
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 30, completion_tokens: 2, total_tokens: 32 },
      },
    }));
  });
  afterAll(() => server.close());

  test('resolves an id to a client, report metadata and a cost model; unknown ids to undefined', () => {
    const hosted = new HostedModels(registry, staticKeySource({}));

    const hit = hosted.resolve('claude-sonnet-4.6', { temperature: 0.5 });

    expect(hit?.client).toMatchObject({ id: 'claude-sonnet-4.6', offline: false, params: { model: 'claude-sonnet-4-6', temperature: 0.5 } });
    expect(hit?.info).toEqual({
      knowledgeCutoff: '2025-08',
      displayName: 'Claude-Sonnet-4.6',
      developer: 'Anthropic',
      open: false,
      config: { name: 'claude-sonnet-4.6', provider: 'anthropic', model: 'claude-sonnet-4-6', max_output_tokens: 16000, temperature: 0.5 },
    });
    expect(hosted.resolve('nope', {})).toBeUndefined();
    expect(hosted.ids()).toContain('gpt-5.4');
  });

  test('a temperature override is not sent to reasoning models that refuse one', () => {
    const hosted = new HostedModels(registry, staticKeySource({}));

    expect(hosted.resolve('gpt-5.4', { temperature: 0.7 })!.client.params.temperature).toBeUndefined();
    expect(hosted.resolve('gpt-4.1', { temperature: 0.7 })!.client.params.temperature).toBe(0.7);
  });

  test("a batch client keeps its provider's limits before it is built (its key not yet read)", () => {
    const hosted = new HostedModels(registry, staticKeySource({}));
    const bedrock = parseModelEntry({
      id: 'claude-on-bedrock',
      provider: 'bedrock',
      model: 'anthropic.claude-fake',
      region: 'us-east-1',
      params: { max_output_tokens: 1000 },
      prices: {
        input: 3,
        cached_input: 0.3,
        output: 15,
        as_of: '2026-12-01',
        batch: { input: 1.5, cached_input: 0.15, output: 7.5, as_of: '2026-12-01', source: 'https://aws.amazon.com/bedrock/pricing/' },
      },
      knowledge_cutoff: '2025-01',
      context_window: 200000,
      batch_s3_uri: 's3://b/rcb',
      batch_role_arn: 'arn:aws:iam::123456789012:role/rcb-batch',
    });

    expect(hosted.resolveBatch('gemini-3-flash')!.client.limits).toEqual({ maxRequests: 10_000, maxPromptChars: 8_000_000 });
    expect(new HostedModels([bedrock], staticKeySource({})).resolveBatch('claude-on-bedrock')!.client.limits).toMatchObject({ minRequests: 100 });
    expect(hosted.resolveBatch('gpt-5.4')!.client.limits).toBeUndefined();
  });

  test('calls go to the provider through the lazily built client', async () => {
    const entry = parseModelEntry({
      id: 'local',
      provider: 'openai-compatible',
      model: 'qwen',
      base_url: `${server.url}/v1`,
      params: { max_output_tokens: 100 },
      prices: { input: 1, cached_input: 0.5, output: 2, as_of: '2026-11-29' },
      knowledge_cutoff: '2025-01',
      context_window: 32000,
    });
    const hit = new HostedModels([entry], staticKeySource({})).resolve('local');

    const res = await hit!.client.complete(request());

    expect(res.text).toBe('hi');
    expect(hit!.cost.billed(res.usage)).toBeCloseTo((30 * 1 + 2 * 2) / 1e6, 12);
  });

  test('a missing key fails each call with an auth error, and checkKeys reports it up front', async () => {
    const hosted = new HostedModels(registry, staticKeySource({ OPENAI_API_KEY: 'o' }));

    const err = await hosted
      .resolve('gemini-3-flash')!
      .client.complete(request())
      .catch((e: unknown) => e);

    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).kind).toBe('auth');
    expect(await hosted.checkKeys(['gpt-5.4', 'gemini-3-flash', 'deepseek-chat', 'bedrock-nova-pro'])).toEqual([
      'set GEMINI_API_KEY for gemini-3-flash',
      'set DEEPSEEK_API_KEY for deepseek-chat',
    ]);
  });

  test('the worst case reserved covers the prompt upper bound and the full output limit', () => {
    const entry = findModel(registry, 'claude-opus-4.6');
    const prompt = request().prompt;

    const cost = costModelFor(entry);

    expect(cost.worstCase(prompt)).toBeCloseTo(worstCaseCost(promptTokensUpperBound(prompt.text, entry), 16000, entry.prices), 12);
    expect(cost.worstCase(prompt)).toBeGreaterThan((16000 * 25) / 1e6);
    const usage = { inputTokens: 100, cachedInputTokens: 0, cacheWriteInputTokens: 40, outputTokens: 10, reasoningTokens: 0 };
    expect(cost.billed(usage)).toBeCloseTo(costOf(usage, entry.prices), 12);
  });
});
