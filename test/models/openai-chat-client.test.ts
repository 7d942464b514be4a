import { OpenAIChatClient } from '../../adapters/models/providers/openai';
import { parseModelEntry, type ModelEntry } from '../../adapters/models/registry';
import { ResilientModelClient } from '../../adapters/models/resilient-client';
import { caught, PREFIX, providerContract, recordingClock, request } from './support/provider-contract';
import { startFakeProvider, type FakeProvider, type Reply } from './support/fake-provider';

function entry(url: string, over: Record<string, unknown> = {}): ModelEntry {
  return parseModelEntry({
    id: 'gpt-test',
    provider: 'openai',
    model: 'gpt-5.4-mini',
    base_url: `${url}/v1`,
    params: { max_output_tokens: 2048, temperature: 0.2 },
    prices: { input: 0.75, cached_input: 0.075, output: 4.5, as_of: '2026-11-29' },
    knowledge_cutoff: '2025-08',
    context_window: 400000,
    ...over,
  });
}

// Modelled on the documented Chat Completions response.
function completion(content: string | null, finish = 'stop'): Reply {
  return {
    body: {
      id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
      object: 'chat.completion',
      created: 1741570283,
      model: 'gpt-5.4-mini-2026-03-17',
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null, annotations: [] }, logprobs: null, finish_reason: finish }],
      usage: {
        prompt_tokens: 1117,
        completion_tokens: 46,
        total_tokens: 1163,
        prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 12, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
      service_tier: 'default',
      system_fingerprint: 'fp_fc9f1d7035',
    },
  };
}

function openaiError(status: number, message: string, type: string, code: string | null, headers: Record<string, string> = {}): Reply {
  return { status, headers, body: { error: { message, type, param: null, code } } };
}

providerContract({
  name: 'OpenAI Chat Completions',
  client: (url, opts) => new OpenAIChatClient(entry(url), 'sk-test', opts),
  success: completion('```python\nloss = x.mean()\n```'),
  expected: {
    text: '```python\nloss = x.mean()\n```',
    finishReason: 'stop',
    usage: { inputTokens: 1117, cachedInputTokens: 1024, outputTokens: 46, reasoningTokens: 12 },
  },
  truncated: completion('```python\nloss =', 'length'),
  rateLimited: (s) =>
    openaiError(429, 'Rate limit reached for gpt-5.4-mini on requests per min (RPM): Limit 500, Used 500, Requested 1.', 'requests', 'rate_limit_exceeded', {
      'retry-after': String(s),
    }),
  serverError: openaiError(500, 'The server had an error while processing your request. Sorry about that!', 'server_error', null),
  badRequest: (m) => openaiError(400, m, 'invalid_request_error', null),
  unauthorized: openaiError(401, 'Incorrect API key provided: sk-test.', 'invalid_request_error', 'invalid_api_key'),
  contextTooLong: openaiError(
    400,
    "This model's maximum context length is 400000 tokens. However, your messages resulted in 412345 tokens. Please reduce the length of the messages.",
    'invalid_request_error',
    'context_length_exceeded',
  ),
});

describe('OpenAI Chat Completions request', () => {
  let server: FakeProvider;
  beforeAll(async () => {
    server = await startFakeProvider(() => completion('ok'));
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
  });

  test('sends the model, one user message, max_completion_tokens, temperature and a prompt cache key for the prefix', async () => {
    const client = new OpenAIChatClient(entry(server.url), 'sk-test');

    await client.complete(request());

    const [req] = server.requests;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-test');
    expect(req.json).toMatchObject({
      model: 'gpt-5.4-mini',
      messages: [{ role: 'user', content: request().prompt.text }],
      max_completion_tokens: 2048,
      temperature: 0.2,
    });
    expect(req.json.max_tokens).toBeUndefined();
    expect(req.json.prompt_cache_key).toMatch(/^rcb-[0-9a-f]{40}$/);
  });

  test('the prompt cache key depends on the shared prefix only', async () => {
    const client = new OpenAIChatClient(entry(server.url), 'sk-test');
    const other = request();
    other.prompt = { text: `${PREFIX}another snippet`, sharedPrefixChars: PREFIX.length };

    await client.complete(request());
    await client.complete(other);

    expect(server.requests[0].json.prompt_cache_key).toBe(server.requests[1].json.prompt_cache_key);
  });

  test('openai-compatible endpoints get max_tokens, no cache key, and extra_body fields', async () => {
    const e = entry(server.url, {
      provider: 'openai-compatible',
      model: 'deepseek-chat',
      params: { max_output_tokens: 1000, extra_body: { provider: { order: ['deepseek'] } } },
    });
    const client = new OpenAIChatClient(e, 'sk-ds');

    await client.complete(request());

    const body = server.requests[0].json;
    expect(body.max_tokens).toBe(1000);
    expect(body.max_completion_tokens).toBeUndefined();
    expect(body.prompt_cache_key).toBeUndefined();
    expect(body.temperature).toBeUndefined();
    expect(body.provider).toEqual({ order: ['deepseek'] });
  });

  test("DeepSeek's prompt_cache_hit_tokens are read as cached input", async () => {
    server.reply({
      body: {
        id: 'x',
        object: 'chat.completion',
        model: 'deepseek-chat',
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 900, completion_tokens: 10, total_tokens: 910, prompt_cache_hit_tokens: 640, prompt_cache_miss_tokens: 260 },
      },
    });
    const client = new OpenAIChatClient(entry(server.url, { provider: 'openai-compatible', model: 'deepseek-chat' }), 'k');

    const res = await client.complete(request());

    expect(res.usage).toEqual({ inputTokens: 900, cachedInputTokens: 640, outputTokens: 10, reasoningTokens: 0 });
  });

  test('an empty answer is returned as empty text, not an error', async () => {
    server.reply(completion(null, 'length'));
    const client = new OpenAIChatClient(entry(server.url), 'sk-test');

    const res = await client.complete(request());

    expect(res).toMatchObject({ text: '', finishReason: 'length' });
  });

  test('a 200 without choices is a malformed_response', async () => {
    server.reply({ body: { id: 'x', object: 'chat.completion', choices: [] } });
    const client = new OpenAIChatClient(entry(server.url), 'sk-test');

    const err = await caught(client.complete(request()));

    expect(err.kind).toBe('malformed_response');
  });

  test('exhausted credit (429 insufficient_quota) is not retried', async () => {
    server.reply(openaiError(429, 'You exceeded your current quota, please check your plan and billing details.', 'insufficient_quota', 'insufficient_quota'));
    const rc = new ResilientModelClient(new OpenAIChatClient(entry(server.url), 'sk-test'), { clock: recordingClock(), random: () => 0 });

    const err = await caught(rc.complete(request()));

    expect(err.retryable).toBe(false);
    expect(err.message).toContain('exceeded your current quota');
    expect(server.requests).toHaveLength(1);
  });

  test('retry-after-ms is preferred to retry-after', async () => {
    server.reply(openaiError(429, 'slow down', 'requests', 'rate_limit_exceeded', { 'retry-after-ms': '250', 'retry-after': '9' }));
    const client = new OpenAIChatClient(entry(server.url), 'sk-test');

    const err = await caught(client.complete(request()));

    expect(err.retryAfterMs).toBe(250);
  });
});
