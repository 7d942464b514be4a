/**
 * Local servers in each provider's batch wire format, over one FakeBatchBackend: OpenAI's
 * Files + Batch API (and Chat Completions, to compare with interactive runs), Anthropic's
 * Message Batches (results as JSONL at results_url), Gemini's batchGenerateContent
 * operations, and Bedrock's model invocation jobs (control plane here; input and output
 * JSONL in S3, served by s3rver).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FAKE_USAGE, FakeBatchBackend, type FakeBatch, type ItemResult } from './fake-batch-backend';

export interface FakeServer {
  url: string;
  backend: FakeBatchBackend;
  /** Requests received, as `METHOD path`. */
  log: string[];
  close(): Promise<void>;
}

type Handler = (req: { method: string; path: string; query: URLSearchParams; body: Buffer; headers: http.IncomingHttpHeaders }) => Promise<Reply> | Reply;
interface Reply {
  status?: number;
  json?: unknown;
  text?: string;
  contentType?: string;
}

async function serve(backend: FakeBatchBackend, handle: Handler): Promise<FakeServer> {
  const log: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      log.push(`${req.method} ${url.pathname}`);
      let reply: Reply;
      try {
        reply = await handle({ method: req.method ?? '', path: url.pathname, query: url.searchParams, body: Buffer.concat(chunks), headers: req.headers });
      } catch (e) {
        reply = { status: 500, json: { error: { message: String(e) } } };
      }
      res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? (reply.text !== undefined ? 'application/jsonl' : 'application/json') });
      res.end(reply.text ?? JSON.stringify(reply.json ?? {}));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    backend,
    log,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const notFound: Reply = { status: 404, json: { error: { message: 'not found', type: 'not_found_error' } } };

// ---------------------------------------------------------------- OpenAI

/** The file part of a multipart/form-data body. */
function multipartFile(body: Buffer, contentType: string | undefined): string {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType ?? '');
  const text = body.toString('utf8');
  if (!boundary) return text;
  const b = `--${boundary[1] ?? boundary[2]}`;
  for (const part of text.split(b)) {
    if (!/filename=/.test(part)) continue;
    const start = part.indexOf('\r\n\r\n');
    return part.slice(start + 4).replace(/\r\n$/, '');
  }
  return '';
}

export async function startFakeOpenAI(answer: (prompt: string) => string): Promise<FakeServer> {
  const promptOf = (body: any): string => body.messages?.[0]?.content ?? body.input?.[0]?.content ?? '';
  const backend = new FakeBatchBackend(answer, promptOf);
  const files = new Map<string, string>();
  let fileSeq = 0;
  const batchObject = (b: FakeBatch) => {
    const status = b.state === 'ended' ? b.endedAs : b.state === 'canceling' ? 'cancelling' : 'in_progress';
    const out = b.results.filter((r) => r.kind === 'ok');
    const err = b.results.filter((r) => r.kind !== 'ok');
    let output_file_id: string | null = null;
    let error_file_id: string | null = null;
    if (b.state === 'ended') {
      if (out.length) files.set((output_file_id = `file-out-${b.id}`), `${out.map((r) => JSON.stringify(openaiLine(r, (b as any).endpoint))).join('\n')}\n`);
      if (err.length) files.set((error_file_id = `file-err-${b.id}`), `${err.map((r) => JSON.stringify(openaiLine(r, (b as any).endpoint))).join('\n')}\n`);
    }
    return {
      id: b.id,
      object: 'batch',
      endpoint: (b as any).endpoint,
      status,
      output_file_id,
      error_file_id,
      metadata: (b as any).metadata ?? null,
      request_counts: { total: b.requests.length, completed: out.length, failed: err.length },
    };
  };
  return serve(backend, (req) => {
    const auth = req.headers.authorization;
    if (auth !== 'Bearer test-key') return { status: 401, json: { error: { message: 'bad key' } } };
    if (req.method === 'POST' && req.path === '/v1/files') {
      const id = `file-in-${++fileSeq}`;
      files.set(id, multipartFile(req.body, req.headers['content-type']));
      return { json: { id, object: 'file', purpose: 'batch' } };
    }
    if (req.method === 'POST' && req.path === '/v1/batches') {
      const body = JSON.parse(req.body.toString());
      const lines = (files.get(body.input_file_id) ?? '')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      if (body.completion_window !== '24h' || lines.some((l) => l.url !== body.endpoint || l.method !== 'POST'))
        return { status: 400, json: { error: { message: 'bad batch' } } };
      const b = backend.create(lines.map((l) => ({ customId: l.custom_id, body: l.body })));
      (b as any).endpoint = body.endpoint;
      (b as any).metadata = body.metadata ?? null;
      return { json: batchObject(b) };
    }
    if (req.method === 'GET' && req.path === '/v1/batches') {
      // Newest first, in pages (`after` a batch id, `limit`), as OpenAI lists them.
      const all = [...backend.batches].reverse();
      const after = req.query.get('after');
      const from = after ? all.findIndex((b) => b.id === after) + 1 : 0;
      const page = all.slice(from, from + Number(req.query.get('limit') ?? 20)).map((b) => batchObject(b));
      return {
        json: { object: 'list', data: page, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null, has_more: from + page.length < all.length },
      };
    }
    let m = /^\/v1\/batches\/([^/]+)(\/cancel)?$/.exec(req.path);
    if (m) {
      const b = m[2] ? backend.cancel(m[1]) : backend.get(m[1]);
      return b ? { json: batchObject(b) } : notFound;
    }
    m = /^\/v1\/files\/([^/]+)\/content$/.exec(req.path);
    if (m) {
      const text = files.get(m[1]);
      return text === undefined ? notFound : { text };
    }
    if (req.method === 'POST' && (req.path === '/v1/chat/completions' || req.path === '/v1/responses')) {
      backend.interactiveCalls++;
      const body = JSON.parse(req.body.toString());
      const line = openaiLine({ customId: 'x', kind: 'ok', text: answer(promptOf(body)) }, req.path);
      return { json: line.response!.body };
    }
    return notFound;
  });
}

function chatBody(text: string) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    model: 'fake',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { prompt_tokens: FAKE_USAGE.input, completion_tokens: FAKE_USAGE.output, total_tokens: FAKE_USAGE.input + FAKE_USAGE.output },
  };
}

function openaiLine(r: ItemResult, endpoint: string) {
  if (r.kind === 'ok') {
    const body =
      endpoint === '/v1/responses'
        ? {
            id: 'resp',
            object: 'response',
            status: 'completed',
            output: [{ type: 'message', content: [{ type: 'output_text', text: r.text }] }],
            usage: {
              input_tokens: FAKE_USAGE.input,
              output_tokens: FAKE_USAGE.output,
              input_tokens_details: { cached_tokens: 0 },
              output_tokens_details: { reasoning_tokens: 0 },
            },
          }
        : chatBody(r.text);
    return { id: `req-${r.customId}`, custom_id: r.customId, response: { status_code: 200, request_id: 'x', body }, error: null };
  }
  if (r.kind === 'error')
    return {
      id: `req-${r.customId}`,
      custom_id: r.customId,
      response: { status_code: r.status, request_id: 'x', body: { error: { message: r.message, type: 'server_error' } } },
      error: null,
    };
  return {
    id: `req-${r.customId}`,
    custom_id: r.customId,
    response: null,
    error: { code: r.kind === 'expired' ? 'batch_expired' : 'batch_cancelled', message: `request ${r.kind}` },
  };
}

// ---------------------------------------------------------------- Anthropic

export async function startFakeAnthropic(answer: (prompt: string) => string): Promise<FakeServer> {
  // A prompt is the concatenation of its content blocks (prefix and task part).
  const promptOf = (params: any): string => (params.messages?.[0]?.content ?? []).map((b: any) => b.text ?? '').join('');
  const backend = new FakeBatchBackend(answer, promptOf);
  let url = '';
  const batchObject = (b: FakeBatch) => ({
    id: b.id,
    type: 'message_batch',
    processing_status: b.state === 'ended' ? 'ended' : b.state === 'canceling' ? 'canceling' : 'in_progress',
    request_counts: {
      processing: b.state === 'ended' ? 0 : b.requests.length,
      succeeded: b.results.filter((r) => r.kind === 'ok').length,
      errored: b.results.filter((r) => r.kind === 'error').length,
      canceled: b.results.filter((r) => r.kind === 'cancelled').length,
      expired: b.results.filter((r) => r.kind === 'expired').length,
    },
    results_url: b.state === 'ended' ? `${url}/v1/messages/batches/${b.id}/results` : null,
  });
  const server = await serve(backend, (req) => {
    if (req.headers['x-api-key'] !== 'test-key')
      return { status: 401, json: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } } };
    if (req.method === 'POST' && req.path === '/v1/messages/batches') {
      const body = JSON.parse(req.body.toString());
      if (!Array.isArray(body.requests) || body.requests.some((r: any) => !/^[a-zA-Z0-9_-]{1,64}$/.test(r.custom_id) || !r.params?.max_tokens)) {
        return { status: 400, json: { type: 'error', error: { type: 'invalid_request_error', message: 'bad requests' } } };
      }
      return { json: batchObject(backend.create(body.requests.map((r: any) => ({ customId: r.custom_id, body: r.params })))) };
    }
    if (req.method === 'POST' && req.path === '/v1/messages') {
      backend.interactiveCalls++;
      return {
        json: (anthropicResult({ customId: 'x', kind: 'ok', text: answer(promptOf(JSON.parse(req.body.toString()))) }) as { message: unknown }).message,
      };
    }
    const m = /^\/v1\/messages\/batches\/([^/]+)(\/cancel|\/results)?$/.exec(req.path);
    if (!m) return notFound;
    if (m[2] === '/results') {
      const b = backend.batches.find((x) => x.id === m[1]);
      if (!b || b.state !== 'ended') return notFound;
      return {
        text: `${b.results.map((r) => JSON.stringify({ custom_id: r.customId, result: anthropicResult(r) })).join('\n')}\n`,
        contentType: 'application/binary',
      };
    }
    const b = m[2] === '/cancel' ? backend.cancel(m[1]) : backend.get(m[1]);
    return b ? { json: batchObject(b) } : notFound;
  });
  url = server.url;
  return server;
}

function anthropicResult(r: ItemResult) {
  switch (r.kind) {
    case 'ok':
      return {
        type: 'succeeded',
        message: {
          id: 'msg',
          type: 'message',
          role: 'assistant',
          model: 'claude-fake',
          content: [{ type: 'text', text: r.text }],
          stop_reason: 'end_turn',
          usage: { input_tokens: FAKE_USAGE.input, output_tokens: FAKE_USAGE.output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
        },
      };
    case 'error':
      return { type: 'errored', error: { type: 'error', error: { type: r.status >= 500 ? 'api_error' : 'invalid_request_error', message: r.message } } };
    case 'expired':
      return { type: 'expired' };
    case 'cancelled':
      return { type: 'canceled' };
  }
}

// ---------------------------------------------------------------- Gemini

export async function startFakeGemini(answer: (prompt: string) => string): Promise<FakeServer> {
  const promptOf = (request: any): string => (request.contents?.[0]?.parts ?? []).map((p: any) => p.text ?? '').join('');
  const backend = new FakeBatchBackend(answer, promptOf);
  const STATE: Record<string, string> = { completed: 'BATCH_STATE_SUCCEEDED', expired: 'BATCH_STATE_EXPIRED', cancelled: 'BATCH_STATE_CANCELLED' };
  const operation = (b: FakeBatch) => {
    const state = b.state === 'ended' ? STATE[b.endedAs!] : 'BATCH_STATE_RUNNING';
    // Requests a batch did not process (expired, cancelled) have no inlined response.
    const responses = b.results
      .filter((r) => r.kind === 'ok' || r.kind === 'error')
      .map((r) =>
        r.kind === 'ok'
          ? {
              response: {
                candidates: [{ content: { role: 'model', parts: [{ text: r.text }] }, finishReason: 'STOP' }],
                usageMetadata: { promptTokenCount: FAKE_USAGE.input, candidatesTokenCount: FAKE_USAGE.output },
                modelVersion: 'gemini-fake',
              },
              metadata: { key: r.customId },
            }
          : { error: { code: r.status >= 500 ? 13 : 3, message: r.message }, metadata: { key: r.customId } },
      );
    return {
      name: `batches/${b.id}`,
      metadata: {
        '@type': 'type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch',
        name: `batches/${b.id}`,
        displayName: (b as any).displayName,
        state,
        ...(b.state === 'ended' ? { output: { inlinedResponses: { inlinedResponses: responses } } } : {}),
      },
    };
  };
  return serve(backend, (req) => {
    if (req.headers['x-goog-api-key'] !== 'test-key')
      return {
        status: 400,
        json: { error: { code: 400, message: 'API key not valid', status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] } },
      };
    if (/^\/v1beta\/models\/([^/:]+):generateContent$/.test(req.path) && req.method === 'POST') {
      backend.interactiveCalls++;
      const text = answer(promptOf(JSON.parse(req.body.toString())));
      return {
        json: {
          candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason: 'STOP' }],
          usageMetadata: { promptTokenCount: FAKE_USAGE.input, candidatesTokenCount: FAKE_USAGE.output },
          modelVersion: 'gemini-fake',
        },
      };
    }
    let m = /^\/v1beta\/models\/([^/:]+):batchGenerateContent$/.exec(req.path);
    if (m && req.method === 'POST') {
      const body = JSON.parse(req.body.toString());
      const requests = body.batch?.inputConfig?.requests?.requests;
      if (!Array.isArray(requests) || requests.some((r: any) => !r.request?.contents || !r.metadata?.key))
        return { status: 400, json: { error: { code: 400, message: 'bad batch' } } };
      const created = backend.create(requests.map((r: any) => ({ customId: r.metadata.key, body: r.request })));
      (created as any).displayName = body.batch?.displayName;
      return { json: operation(created) };
    }
    if (req.method === 'GET' && req.path === '/v1beta/batches') {
      // Newest first, one page (the fake holds few).
      return { json: { operations: [...backend.batches].reverse().map((b) => operation(b)) } };
    }
    m = /^\/v1beta\/batches\/([^/:]+)(:cancel)?$/.exec(req.path);
    if (m) {
      const b = m[2] ? backend.cancel(m[1]) : backend.get(m[1]);
      return b ? { json: m[2] ? {} : operation(b) } : { status: 404, json: { error: { code: 404, message: 'not found' } } };
    }
    return { status: 404, json: { error: { code: 404, message: 'not found' } } };
  });
}

// ---------------------------------------------------------------- Bedrock

/**
 * Bedrock's control plane for model invocation jobs; the job's input and output live in
 * S3 (`s3`, a client of an s3rver), read and written here as Bedrock would.
 */
export async function startFakeBedrock(answer: (prompt: string) => string, s3: import('@aws-sdk/client-s3').S3Client): Promise<FakeServer> {
  const { GetObjectCommand, PutObjectCommand } = await import('@aws-sdk/client-s3');
  const promptOf = (modelInput: any): string => (modelInput.messages?.[0]?.content ?? []).map((b: any) => b.text ?? '').join('');
  const backend = new FakeBatchBackend(answer, promptOf);
  const jobs = new Map<string, { arn: string; input: string; output: string; written: boolean; inputKey: string; jobName?: string }>();
  const split = (uri: string) => {
    const m = /^s3:\/\/([^/]+)\/(.*)$/.exec(uri)!;
    return { bucket: m[1], key: m[2] };
  };
  const STATUS: Record<string, string> = { completed: 'Completed', expired: 'Expired', cancelled: 'Stopped' };
  const jobObject = async (b: FakeBatch) => {
    const job = jobs.get(b.id)!;
    if (b.state === 'ended' && !job.written) {
      // Records the job never reached (expired, stopped) have no output line.
      const lines = b.results
        .filter((r) => r.kind === 'ok' || r.kind === 'error')
        .map((r) =>
          JSON.stringify(
            r.kind === 'ok'
              ? {
                  recordId: r.customId,
                  modelInput: {},
                  modelOutput: {
                    output: { message: { role: 'assistant', content: [{ text: r.text }] } },
                    stopReason: 'end_turn',
                    usage: { inputTokens: FAKE_USAGE.input, outputTokens: FAKE_USAGE.output, totalTokens: FAKE_USAGE.input + FAKE_USAGE.output },
                  },
                }
              : { recordId: r.customId, modelInput: {}, error: { errorCode: r.status, errorMessage: r.message } },
          ),
        );
      const out = split(job.output);
      await s3.send(new PutObjectCommand({ Bucket: out.bucket, Key: `${out.key}${b.id}/input.jsonl.out`, Body: `${lines.join('\n')}\n` }));
      await s3.send(
        new PutObjectCommand({ Bucket: out.bucket, Key: `${out.key}${b.id}/manifest.json.out`, Body: JSON.stringify({ totalRecordCount: b.requests.length }) }),
      );
      job.written = true;
    }
    const status = b.state === 'ended' ? STATUS[b.endedAs!] : b.state === 'canceling' ? 'Stopping' : 'InProgress';
    return {
      jobArn: job.arn,
      status,
      inputDataConfig: { s3InputDataConfig: { s3Uri: job.input } },
      outputDataConfig: { s3OutputDataConfig: { s3Uri: job.output } },
    };
  };
  return serve(backend, async (req) => {
    if (!String(req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256')) return { status: 403, json: { message: 'missing signature' } };
    if (req.method === 'POST' && req.path === '/model-invocation-job') {
      const body = JSON.parse(req.body.toString());
      if (!body.roleArn || body.modelInvocationType !== 'Converse' || !body.inputDataConfig?.s3InputDataConfig?.s3Uri)
        return { status: 400, json: { message: 'ValidationException' } };
      const input = split(body.inputDataConfig.s3InputDataConfig.s3Uri);
      const text = await (await s3.send(new GetObjectCommand({ Bucket: input.bucket, Key: input.key }))).Body!.transformToString();
      const records = text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      if (records.some((r) => !r.recordId || !r.modelInput?.messages || r.modelInput.modelId))
        return { status: 400, json: { message: 'ValidationException: bad record' } };
      const b = backend.create(records.map((r) => ({ customId: r.recordId, body: r.modelInput })));
      const arn = `arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/${b.id}`;
      jobs.set(b.id, {
        arn,
        input: body.inputDataConfig.s3InputDataConfig.s3Uri,
        output: body.outputDataConfig.s3OutputDataConfig.s3Uri,
        written: false,
        inputKey: input.key,
        jobName: body.jobName,
      });
      return { json: { jobArn: arn } };
    }
    if (req.method === 'GET' && req.path === '/model-invocation-jobs') {
      const contains = req.query.get('nameContains') ?? '';
      const summaries = backend.batches.map((b) => ({ b, job: jobs.get(b.id)! })).filter(({ job }) => String(job.jobName ?? '').includes(contains));
      return {
        json: {
          invocationJobSummaries: summaries.map(({ b, job }) => ({
            jobArn: job.arn,
            jobName: job.jobName,
            status: b.state === 'ended' ? STATUS[b.endedAs!] : 'InProgress',
          })),
        },
      };
    }
    const m = /^\/model-invocation-job\/([^/]+)(\/stop)?$/.exec(req.path);
    if (!m) return { status: 404, json: { message: 'not found' } };
    const id = decodeURIComponent(m[1]);
    const b = m[2] ? backend.cancel(id) : backend.get(id);
    if (!b) return { status: 404, json: { message: 'ResourceNotFoundException' } };
    return { json: m[2] ? {} : await jobObject(b) };
  });
}

// ---------------------------------------------------------------- OpenAI Responses, background mode

/** How one background response ends: answered, failed (retryable or not), or cancelled by the provider. */
export type BackgroundFate = 'ok' | 'server_error' | 'invalid_prompt' | 'cancelled';

export interface FakeBackgroundServer extends FakeServer {
  /** Every background response created, in order. */
  responses: Array<{ id: string; prompt: string; status: string; polls: number; fate: BackgroundFate }>;
  /** Fate of each new response, in order; then `ok`. */
  fates: BackgroundFate[];
  /** Retrievals a response stays `queued`, then `in_progress`, before it ends. @default 1 each */
  slowness: { queued: number; inProgress: number };
}

/**
 * OpenAI's Responses API in background mode, slowly: a response created with
 * `background: true` is `queued`, then `in_progress`, for some retrievals each, then ends as
 * its fate says; POST /v1/responses/{id}/cancel cancels a running one.
 */
export async function startFakeOpenAIBackground(answer: (prompt: string) => string): Promise<FakeBackgroundServer> {
  const promptOf = (body: any): string => body.input?.[0]?.content ?? '';
  const backend = new FakeBatchBackend(answer, promptOf);
  const responses: FakeBackgroundServer['responses'] = [];
  // The returned server itself: tests set its fates and slowness between runs.
  const state = { fates: [] as BackgroundFate[], slowness: { queued: 1, inProgress: 1 } } as FakeBackgroundServer;
  const usage = {
    input_tokens: FAKE_USAGE.input,
    output_tokens: FAKE_USAGE.output,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens_details: { reasoning_tokens: 0 },
  };
  const body = (r: FakeBackgroundServer['responses'][number]) => {
    const base = { id: r.id, object: 'response', model: 'gpt-fake-r', status: r.status, background: true };
    if (r.status === 'completed')
      return {
        ...base,
        output: [
          { type: 'reasoning', summary: [] },
          { type: 'message', content: [{ type: 'output_text', text: answer(r.prompt) }] },
        ],
        usage,
      };
    if (r.status === 'failed') {
      const error =
        r.fate === 'server_error'
          ? { code: 'server_error', message: 'the server had an error' }
          : { code: 'invalid_prompt', message: 'the prompt was flagged' };
      return { ...base, output: [], error };
    }
    return { ...base, output: [] };
  };
  const advance = (r: FakeBackgroundServer['responses'][number]) => {
    r.polls++;
    if (r.status === 'cancelled' || r.status === 'completed' || r.status === 'failed') return;
    if (r.polls <= state.slowness.queued) r.status = 'queued';
    else if (r.polls <= state.slowness.queued + state.slowness.inProgress) r.status = 'in_progress';
    else r.status = r.fate === 'ok' ? 'completed' : r.fate === 'cancelled' ? 'cancelled' : 'failed';
  };
  const server = await serve(backend, (req) => {
    if (req.headers.authorization !== 'Bearer test-key') return { status: 401, json: { error: { message: 'bad key' } } };
    if (req.method === 'POST' && req.path === '/v1/responses') {
      const b = JSON.parse(req.body.toString());
      if (b.background !== true || b.store !== true) {
        backend.interactiveCalls++;
        return { status: 400, json: { error: { message: 'this fake answers background responses only' } } };
      }
      const r = { id: `resp_${responses.length + 1}`, prompt: promptOf(b), status: 'queued', polls: 0, fate: state.fates.shift() ?? ('ok' as BackgroundFate) };
      responses.push(r);
      return { json: body(r) };
    }
    const m = /^\/v1\/responses\/([^/]+)(\/cancel)?$/.exec(req.path);
    const r = m && responses.find((x) => x.id === m[1]);
    if (!r) return notFound;
    if (m![2]) {
      if (r.status === 'queued' || r.status === 'in_progress') r.status = 'cancelled';
      return { json: body(r) };
    }
    advance(r);
    return { json: body(r) };
  });
  return Object.assign(state, server, { responses });
}
