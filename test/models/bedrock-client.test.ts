import { BedrockClient } from '../../adapters/models/providers/bedrock';
import { parseModelEntry, type ModelEntry } from '../../adapters/models/registry';
import { PREFIX, providerContract, request, SUFFIX } from './support/provider-contract';
import { startFakeProvider, type FakeProvider, type Reply } from './support/fake-provider';

const AWS = { region: 'us-east-1', credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' } };

function entry(url: string, over: Record<string, unknown> = {}): ModelEntry {
  return parseModelEntry({
    id: 'bedrock-claude-test',
    provider: 'bedrock',
    model: 'us.anthropic.claude-sonnet-4-6',
    base_url: url,
    region: 'us-east-1',
    prompt_cache: true,
    params: { max_output_tokens: 4096, temperature: 0 },
    prices: { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15, as_of: '2026-11-29' },
    knowledge_cutoff: '2025-08',
    context_window: 1000000,
    ...over,
  });
}

// Modelled on the documented Converse response, with prompt-caching usage.
function converse(text: string, stop = 'end_turn'): Reply {
  return {
    headers: { 'x-amzn-requestid': 'b6d2f8a4-1f3e-4c0e-9a8f-2b1e2f3a4b5c' },
    body: {
      output: { message: { role: 'assistant', content: [{ text }] } },
      stopReason: stop,
      usage: { inputTokens: 30, outputTokens: 628, totalTokens: 2706, cacheReadInputTokens: 2048, cacheWriteInputTokens: 0 },
      metrics: { latencyMs: 1275 },
    },
  };
}

function awsError(status: number, type: string, message: string, headers: Record<string, string> = {}): Reply {
  return { status, headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers }, body: { message } };
}

providerContract({
  name: 'Bedrock Converse',
  http2: true,
  client: (url, opts) => new BedrockClient(entry(url), undefined, opts),
  success: converse('y = x @ w\n'),
  expected: {
    text: 'y = x @ w\n',
    finishReason: 'stop',
    usage: { inputTokens: 30 + 2048, cachedInputTokens: 2048, cacheWriteInputTokens: 0, outputTokens: 628, reasoningTokens: 0 },
  },
  truncated: converse('y = x', 'max_tokens'),
  rateLimited: (s) => awsError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.', { 'retry-after': String(s) }),
  serverError: awsError(500, 'InternalServerException', 'The server encountered an error processing your request.'),
  badRequest: (m) => awsError(400, 'ValidationException', m),
  unauthorized: awsError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.'),
  contextTooLong: awsError(400, 'ValidationException', 'Input is too long for requested model.'),
});

describe('Bedrock Converse request', () => {
  let server: FakeProvider;
  const clients: BedrockClient[] = [];
  function client(e: ModelEntry, token?: string): BedrockClient {
    const c = new BedrockClient(e, token, { aws: AWS });
    clients.push(c);
    return c;
  }
  beforeAll(async () => {
    server = await startFakeProvider(() => converse('ok'), { http2: true });
  });
  afterAll(async () => {
    clients.forEach((c) => c.close());
    await server.close();
  });
  beforeEach(() => {
    server.requests.length = 0;
  });

  test('puts a cachePoint after the shared prefix and sends the inference config, signed with SigV4', async () => {
    await client(entry(server.url)).complete(request());

    const [req] = server.requests;
    expect(req.url).toBe(`/model/${encodeURIComponent('us.anthropic.claude-sonnet-4-6')}/converse`);
    expect(String(req.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDTEST\//);
    expect(req.json).toEqual({
      messages: [{ role: 'user', content: [{ text: PREFIX }, { cachePoint: { type: 'default' } }, { text: SUFFIX }] }],
      inferenceConfig: { maxTokens: 4096, temperature: 0 },
    });
  });

  test('a model without prompt caching gets no cachePoint', async () => {
    await client(entry(server.url, { model: 'meta.llama4-maverick-17b-instruct-v1:0', prompt_cache: false })).complete(request());

    expect(server.requests[0].json.messages[0].content).toEqual([{ text: PREFIX }, { text: SUFFIX }]);
  });

  test('extended thinking sends a budget and no temperature; a budget of 0 keeps the temperature', async () => {
    const params = { max_output_tokens: 16000, temperature: 0 };
    await client(entry(server.url, { params: { ...params, thinking_budget: 8000 } })).complete(request());
    await client(entry(server.url, { params: { ...params, thinking_budget: 0 } })).complete(request());

    const [thinking, plain] = server.requests.map((r) => r.json);
    expect(thinking.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 8000 } });
    expect(thinking.inferenceConfig).toEqual({ maxTokens: 16000 });
    expect(plain.additionalModelRequestFields).toBeUndefined();
    expect(plain.inferenceConfig).toEqual({ maxTokens: 16000, temperature: 0 });
  });

  test('a Bedrock API key is sent as a bearer token', async () => {
    await client(entry(server.url), 'bedrock-api-key-123').complete(request());

    expect(server.requests[0].headers.authorization).toBe('Bearer bedrock-api-key-123');
  });

  test('cache writes are reported apart', async () => {
    server.reply({
      body: {
        output: { message: { role: 'assistant', content: [{ text: 'ok' }] } },
        stopReason: 'end_turn',
        usage: { inputTokens: 30, outputTokens: 5, totalTokens: 2083, cacheReadInputTokens: 0, cacheWriteInputTokens: 2048 },
      },
    });

    const res = await client(entry(server.url)).complete(request());

    expect(res.usage).toEqual({ inputTokens: 2078, cachedInputTokens: 0, cacheWriteInputTokens: 2048, outputTokens: 5, reasoningTokens: 0 });
  });
});
