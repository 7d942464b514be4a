import { staticKeySource } from '../../core/keys';
import { ModelError } from '../../core/model';
import { RateLanes } from '../../core/rate';
import { createModelClient, createRunModelClient, keyEnvFor, laneKey } from '../../adapters/models/create-model-client';
import { AnthropicClient } from '../../adapters/models/providers/anthropic';
import { BedrockClient } from '../../adapters/models/providers/bedrock';
import { GeminiClient } from '../../adapters/models/providers/gemini';
import { OpenAIChatClient } from '../../adapters/models/providers/openai';
import { OpenAIResponsesClient } from '../../adapters/models/providers/openai-responses';
import { findModel, loadRegistry, parseModelEntry, type ModelEntry } from '../../adapters/models/registry';
import { request } from './support/provider-contract';
import { startFakeProvider, type FakeProvider } from './support/fake-provider';

const registry = loadRegistry();

function local(url: string, over: Record<string, unknown> = {}): ModelEntry {
  return parseModelEntry({
    id: 'local',
    provider: 'openai-compatible',
    model: 'qwen',
    base_url: `${url}/v1`,
    params: { max_output_tokens: 100 },
    prices: { input: 0, cached_input: 0, output: 0, as_of: '2026-11-29' },
    knowledge_cutoff: '2025-01',
    context_window: 32000,
    ...over,
  });
}

describe('creating model clients', () => {
  let server: FakeProvider;
  beforeAll(async () => {
    server = await startFakeProvider(() => ({
      body: {
        id: 'c',
        object: 'chat.completion',
        model: 'qwen',
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
      },
    }));
  });
  afterAll(() => server.close());

  test('each provider gets its own client, with its key from the key source', async () => {
    const keys = staticKeySource({ OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a', GEMINI_API_KEY: 'g', DEEPSEEK_API_KEY: 'd' });
    const kinds = await Promise.all(
      ['gpt-4.1', 'gpt-5.4', 'claude-sonnet-4.6', 'gemini-3-flash', 'bedrock-nova-pro', 'deepseek-chat'].map(
        async (id) => (await createModelClient(findModel(registry, id), keys, { aws: { region: 'us-east-1' } })).constructor,
      ),
    );

    expect(kinds).toEqual([OpenAIChatClient, OpenAIResponsesClient, AnthropicClient, GeminiClient, BedrockClient, OpenAIChatClient]);
  });

  test('a missing key is an auth error that names the variable to set', async () => {
    const err = await createModelClient(findModel(registry, 'claude-haiku-4.5'), staticKeySource({})).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ kind: 'auth', message: 'model claude-haiku-4.5: no API key: set ANTHROPIC_API_KEY' });
  });

  test('the key variable comes from the entry, else the provider default', () => {
    expect(keyEnvFor(findModel(registry, 'deepseek-chat'))).toBe('DEEPSEEK_API_KEY');
    expect(keyEnvFor(findModel(registry, 'gemini-3.1-pro'))).toBe('GEMINI_API_KEY');
    expect(keyEnvFor(findModel(registry, 'bedrock-nova-pro'))).toBeUndefined();
  });

  test('an openai-compatible endpoint without auth needs no key', async () => {
    const client = await createModelClient(local(server.url), staticKeySource({}));

    await expect(client.complete(request())).resolves.toMatchObject({ text: 'hi' });
  });

  test('the answer-changing parameters include the API model name', async () => {
    const client = await createModelClient(findModel(registry, 'gpt-5.4'), staticKeySource({ OPENAI_API_KEY: 'o' }));

    expect(client).toMatchObject({ id: 'gpt-5.4', offline: false, params: { model: 'gpt-5.4', max_output_tokens: 32000, reasoning_effort: 'medium' } });
  });

  test('run clients of the same model at the same endpoint share one rate lane', async () => {
    const lanes = new RateLanes();
    const a = local(server.url, { id: 'a', rate: { max_in_flight: 2 } });
    const b = local(server.url, { id: 'b', params: { max_output_tokens: 100, temperature: 1 } });

    await createRunModelClient(a, staticKeySource({}), { lanes });
    await createRunModelClient(b, staticKeySource({}), { lanes });

    expect(laneKey(a)).toBe(laneKey(b));
    expect(Object.values(lanes.snapshot())).toEqual([expect.objectContaining({ maxInFlight: 2 })]);
  });
});
