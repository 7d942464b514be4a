import { AnthropicClient } from '../../adapters/models/providers/anthropic';
import { parseModelEntry, type ModelEntry } from '../../adapters/models/registry';
import { ResilientModelClient } from '../../adapters/models/resilient-client';
import { PREFIX, providerContract, recordingClock, request, SUFFIX } from './support/provider-contract';
import { startFakeProvider, type FakeProvider, type Reply } from './support/fake-provider';

function entry(url: string, over: Record<string, unknown> = {}): ModelEntry {
  return parseModelEntry({
    id: 'claude-test',
    provider: 'anthropic',
    model: 'claude-sonnet-4-6',
    base_url: url,
    params: { max_output_tokens: 4096, temperature: 0 },
    prices: { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15, as_of: '2026-11-29' },
    knowledge_cutoff: '2025-08',
    context_window: 1000000,
    ...over,
  });
}

// Modelled on the documented Messages API response, with prompt-caching usage.
function message(text: string, stop = 'end_turn'): Reply {
  return {
    headers: { 'request-id': 'req_018EeWyXxfu5pfWkrYcMdjWG' },
    body: {
      id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-6',
      content: [{ type: 'text', text }],
      stop_reason: stop,
      stop_sequence: null,
      usage: { input_tokens: 44, cache_creation_input_tokens: 0, cache_read_input_tokens: 2051, output_tokens: 503 },
    },
  };
}

function anthropicError(status: number, type: string, msg: string, headers: Record<string, string> = {}): Reply {
  return { status, headers, body: { type: 'error', error: { type, message: msg } } };
}

providerContract({
  name: 'Anthropic Messages',
  client: (url, opts) => new AnthropicClient(entry(url), 'sk-ant-test', opts),
  success: message('    return torch.mean(x)\n'),
  expected: {
    text: '    return torch.mean(x)\n',
    finishReason: 'stop',
    usage: { inputTokens: 44 + 2051, cachedInputTokens: 2051, cacheWriteInputTokens: 0, outputTokens: 503, reasoningTokens: 0 },
  },
  truncated: message('    return torch.', 'max_tokens'),
  rateLimited: (s) => anthropicError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', { 'retry-after': String(s) }),
  serverError: anthropicError(500, 'api_error', 'Internal server error'),
  badRequest: (m) => anthropicError(400, 'invalid_request_error', m),
  unauthorized: anthropicError(401, 'authentication_error', 'invalid x-api-key'),
  contextTooLong: anthropicError(400, 'invalid_request_error', 'prompt is too long: 1048231 tokens > 1000000 maximum'),
});

describe('Anthropic Messages request', () => {
  let server: FakeProvider;
  beforeAll(async () => {
    server = await startFakeProvider(() => message('ok'));
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
  });

  test('puts the shared prefix in its own block with cache_control and the task in a second block', async () => {
    await new AnthropicClient(entry(server.url), 'sk-ant-test').complete(request());

    const [req] = server.requests;
    expect(req.url).toBe('/v1/messages');
    expect(req.headers['x-api-key']).toBe('sk-ant-test');
    expect(req.headers['anthropic-version']).toBeDefined();
    expect(req.json).toEqual({
      model: 'claude-sonnet-4-6',
      max_tokens: 4096,
      temperature: 0,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: PREFIX, cache_control: { type: 'ephemeral' } },
            { type: 'text', text: SUFFIX },
          ],
        },
      ],
    });
  });

  test('a prompt without a shared prefix is one block without cache_control', async () => {
    const req = request();
    req.prompt = { text: 'just the task', sharedPrefixChars: 0 };

    await new AnthropicClient(entry(server.url), 'k').complete(req);

    expect(server.requests[0].json.messages[0].content).toEqual([{ type: 'text', text: 'just the task' }]);
  });

  test('prompt_cache: false sends the prefix without cache_control', async () => {
    await new AnthropicClient(entry(server.url, { prompt_cache: false }), 'k').complete(request());

    expect(server.requests[0].json.messages[0].content[0].cache_control).toBeUndefined();
  });

  test('extended thinking sends a budget and no temperature', async () => {
    const e = entry(server.url, { params: { max_output_tokens: 16000, temperature: 0, thinking_budget: 8000 } });

    await new AnthropicClient(e, 'k').complete(request());

    expect(server.requests[0].json.thinking).toEqual({ type: 'enabled', budget_tokens: 8000 });
    expect(server.requests[0].json.temperature).toBeUndefined();
  });

  test('cache writes are reported apart so that they are billed at the write price', async () => {
    server.reply({
      body: {
        ...(message('ok').body as object),
        content: [
          { type: 'thinking', thinking: '...', signature: 'x' },
          { type: 'text', text: 'ok' },
        ],
        usage: { input_tokens: 44, cache_creation_input_tokens: 2051, cache_read_input_tokens: 0, output_tokens: 10 },
      },
    });

    const res = await new AnthropicClient(entry(server.url), 'k').complete(request());

    expect(res.text).toBe('ok');
    expect(res.usage).toEqual({ inputTokens: 2095, cachedInputTokens: 0, cacheWriteInputTokens: 2051, outputTokens: 10, reasoningTokens: 0 });
  });

  test('529 overloaded is retried', async () => {
    server.reply(anthropicError(529, 'overloaded_error', 'Overloaded'));
    const rc = new ResilientModelClient(new AnthropicClient(entry(server.url), 'k'), { clock: recordingClock(), random: () => 0 });

    await expect(rc.complete(request())).resolves.toMatchObject({ text: 'ok' });
    expect(server.requests).toHaveLength(2);
  });
});
