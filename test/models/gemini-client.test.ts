import { GeminiClient } from '../../adapters/models/providers/gemini';
import { parseModelEntry, type ModelEntry } from '../../adapters/models/registry';
import { caught, providerContract, request } from './support/provider-contract';
import { startFakeProvider, type FakeProvider, type Reply } from './support/fake-provider';

function entry(url: string, over: Record<string, unknown> = {}): ModelEntry {
  return parseModelEntry({
    id: 'gemini-test',
    provider: 'gemini',
    model: 'gemini-3.1-pro-preview',
    base_url: url,
    params: { max_output_tokens: 8192, temperature: 1, reasoning_effort: 'low' },
    prices: { input: 2, cached_input: 0.2, output: 12, as_of: '2026-11-29' },
    knowledge_cutoff: '2025-01',
    context_window: 1048576,
    ...over,
  });
}

// Modelled on the documented generateContent response, with implicit-cache and thinking counts.
function generated(text: string, finish = 'STOP'): Reply {
  return {
    body: {
      candidates: [{ content: { parts: [{ text }], role: 'model' }, finishReason: finish, index: 0 }],
      usageMetadata: {
        promptTokenCount: 4120,
        candidatesTokenCount: 310,
        totalTokenCount: 5230,
        cachedContentTokenCount: 4096,
        thoughtsTokenCount: 800,
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: 4120 }],
      },
      modelVersion: 'gemini-3.1-pro-preview',
      responseId: 'mAitaLmkHPPlz7IPvtfUqQ4',
    },
  };
}

function googleError(code: number, status: string, message: string, details: unknown[] = [], headers: Record<string, string> = {}): Reply {
  return { status: code, headers, body: { error: { code, message, status, details } } };
}

providerContract({
  name: 'Gemini generateContent',
  client: (url, opts) => new GeminiClient(entry(url), 'AIza-test', opts),
  success: generated('x = torch.zeros(3)\n'),
  expected: {
    text: 'x = torch.zeros(3)\n',
    finishReason: 'stop',
    usage: { inputTokens: 4120, cachedInputTokens: 4096, outputTokens: 310 + 800, reasoningTokens: 800 },
  },
  truncated: generated('x = torch.', 'MAX_TOKENS'),
  // Gemini gives its wait in the body (google.rpc.RetryInfo), not in a header.
  rateLimited: (s) =>
    googleError(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.', [
      {
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
        violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count' }],
      },
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${s}s` },
    ]),
  serverError: googleError(
    500,
    'INTERNAL',
    'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  ),
  badRequest: (m) => googleError(400, 'INVALID_ARGUMENT', m),
  unauthorized: googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
    { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
  ]),
  contextTooLong: googleError(400, 'INVALID_ARGUMENT', 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).'),
});

describe('Gemini generateContent request', () => {
  let server: FakeProvider;
  beforeAll(async () => {
    server = await startFakeProvider(() => generated('ok'));
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
  });

  test('posts the prompt as one user turn with the generation config to the model path', async () => {
    await new GeminiClient(entry(server.url), 'AIza-test').complete(request());

    const [req] = server.requests;
    expect(req.url).toBe('/v1beta/models/gemini-3.1-pro-preview:generateContent');
    expect(req.headers['x-goog-api-key']).toBe('AIza-test');
    expect(req.json.contents).toEqual([{ role: 'user', parts: [{ text: request().prompt.text }] }]);
    expect(req.json.generationConfig).toMatchObject({ maxOutputTokens: 8192, temperature: 1, thinkingConfig: { thinkingLevel: 'LOW' } });
  });

  test('a thinking budget is sent as thinkingBudget', async () => {
    const e = entry(server.url, { model: 'gemini-2.5-flash', params: { max_output_tokens: 8192, thinking_budget: 1024 } });

    await new GeminiClient(e, 'k').complete(request());

    expect(server.requests[0].json.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 1024 });
  });

  test('a Retry-After header is honoured too', async () => {
    server.reply(googleError(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).', [], { 'retry-after': '7' }));

    const err = await caught(new GeminiClient(entry(server.url), 'k').complete(request()));

    expect(err).toMatchObject({ kind: 'rate_limit', retryAfterMs: 7000 });
  });

  test('thought parts are left out of the answer text', async () => {
    server.reply({
      body: {
        candidates: [{ content: { parts: [{ text: 'thinking...', thought: true }, { text: 'answer' }], role: 'model' }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 1, totalTokenCount: 11 },
      },
    });

    const res = await new GeminiClient(entry(server.url), 'k').complete(request());

    expect(res.text).toBe('answer');
  });

  test('a blocked prompt is an empty answer with content_filter', async () => {
    server.reply({ body: { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 10, totalTokenCount: 10 } } });

    const res = await new GeminiClient(entry(server.url), 'k').complete(request());

    expect(res).toMatchObject({ text: '', finishReason: 'content_filter' });
  });
});
