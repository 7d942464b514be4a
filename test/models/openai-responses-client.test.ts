import { OpenAIResponsesClient } from '../../adapters/models/providers/openai-responses';
import { parseModelEntry, type ModelEntry } from '../../adapters/models/registry';
import { caught, providerContract, request } from './support/provider-contract';
import { startFakeProvider, type FakeProvider, type Reply } from './support/fake-provider';

function entry(url: string): ModelEntry {
  return parseModelEntry({
    id: 'gpt-5.4',
    provider: 'openai-responses',
    model: 'gpt-5.4',
    base_url: `${url}/v1`,
    params: { max_output_tokens: 32000, reasoning_effort: 'medium' },
    prices: { input: 2.5, cached_input: 0.25, output: 15, as_of: '2026-11-29' },
    knowledge_cutoff: '2025-08',
    context_window: 1050000,
  });
}

// Modelled on the documented Responses API object of a reasoning model.
function response(text: string, status = 'completed', incomplete: string | null = null): Reply {
  return {
    body: {
      id: 'resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41',
      object: 'response',
      created_at: 1741476777,
      status,
      error: null,
      incomplete_details: incomplete ? { reason: incomplete } : null,
      model: 'gpt-5.4-2026-03-05',
      output: [
        { type: 'reasoning', id: 'rs_67ccd3b0', summary: [] },
        {
          type: 'message',
          id: 'msg_67ccd3bf',
          status: status === 'completed' ? 'completed' : 'incomplete',
          role: 'assistant',
          content: [{ type: 'output_text', text, annotations: [] }],
        },
      ],
      reasoning: { effort: 'medium', summary: null },
      store: false,
      usage: {
        input_tokens: 5081,
        input_tokens_details: { cached_tokens: 4864 },
        output_tokens: 1035,
        output_tokens_details: { reasoning_tokens: 832 },
        total_tokens: 6116,
      },
    },
  };
}

function openaiError(status: number, message: string, code: string | null, headers: Record<string, string> = {}): Reply {
  return { status, headers, body: { error: { message, type: 'invalid_request_error', param: null, code } } };
}

providerContract({
  name: 'OpenAI Responses',
  client: (url, opts) => new OpenAIResponsesClient(entry(url), 'sk-test', opts),
  success: response('def f():\n    return 1\n'),
  expected: {
    text: 'def f():\n    return 1\n',
    finishReason: 'stop',
    usage: { inputTokens: 5081, cachedInputTokens: 4864, outputTokens: 1035, reasoningTokens: 832 },
  },
  truncated: response('', 'incomplete', 'max_output_tokens'),
  rateLimited: (s) => openaiError(429, 'Rate limit reached for gpt-5.4 on tokens per min (TPM).', 'rate_limit_exceeded', { 'retry-after': String(s) }),
  serverError: {
    status: 503,
    body: { error: { message: 'The engine is currently overloaded, please try again later.', type: 'server_error', param: null, code: null } },
  },
  badRequest: (m) => openaiError(400, m, null),
  unauthorized: openaiError(401, 'Incorrect API key provided.', 'invalid_api_key'),
  contextTooLong: openaiError(400, 'Your input exceeds the context window of this model. Please adjust your input and try again.', 'context_length_exceeded'),
});

describe('OpenAI Responses request', () => {
  let server: FakeProvider;
  beforeAll(async () => {
    server = await startFakeProvider(() => response('ok'));
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
  });

  test('sends the model, the input, max_output_tokens, the reasoning effort, store false and a cache key', async () => {
    await new OpenAIResponsesClient(entry(server.url), 'sk-test').complete(request());

    const [req] = server.requests;
    expect(req.url).toBe('/v1/responses');
    expect(req.json).toMatchObject({
      model: 'gpt-5.4',
      input: [{ role: 'user', content: request().prompt.text }],
      max_output_tokens: 32000,
      reasoning: { effort: 'medium' },
      store: false,
    });
    expect(req.json.temperature).toBeUndefined();
    expect(req.json.prompt_cache_key).toMatch(/^rcb-/);
  });

  test('a failed response with a server_error is a retryable server error', async () => {
    server.reply({
      body: { ...(response('').body as object), status: 'failed', output: [], error: { code: 'server_error', message: 'Something went wrong' } },
    });

    const err = await caught(new OpenAIResponsesClient(entry(server.url), 'sk-test').complete(request()));

    expect(err.kind).toBe('server');
    expect(err.message).toContain('Something went wrong');
  });

  test('an answer stopped by the content filter is reported as content_filter', async () => {
    server.reply(response('', 'incomplete', 'content_filter'));

    const res = await new OpenAIResponsesClient(entry(server.url), 'sk-test').complete(request());

    expect(res.finishReason).toBe('content_filter');
  });
});
