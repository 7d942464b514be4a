/**
 * Generation throughput under a rate limit. A local OpenAI-compatible server answers
 * after a fixed latency and enforces a requests-per-minute limit with a token bucket
 * (burst of one second), answering 429 + Retry-After beyond it. N tasks go through the
 * run client (resilient client + rate lane) and the bench prints the throughput as a
 * fraction of what the server's limit allows at best.
 *
 * Two runs: `configured`, where the registry entry carries the server's RPM (the normal
 * case, target >= 0.90), and `discovered`, where the client knows no RPM and must live off
 * 429s, Retry-After and AIMD (for information).
 *
 *   npm run bench -- generation [--tasks 120] [--rpm 600] [--latency 50] [--in-flight 32] [--only configured|discovered]
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { staticKeySource } from '../core/keys';
import type { ModelRequest } from '../core/model';
import { RateLanes } from '../core/rate';
import { createRunModelClient } from '../adapters/models/create-model-client';
import { parseModelEntry } from '../adapters/models/registry';

interface BenchArgs {
  tasks: number;
  rpm: number;
  latencyMs: number;
  inFlight: number;
  only?: 'configured' | 'discovered';
}

interface RunResult {
  name: string;
  tasks: number;
  failed: number;
  elapsedMs: number;
  boundMs: number;
  fraction: number;
  rateLimited: number;
  requests: number;
}

const TARGET = 0.9;

export async function benchGeneration(args: string[]): Promise<void> {
  const opts = parseArgs(args);
  const results: RunResult[] = [];
  for (const name of ['configured', 'discovered'] as const) {
    if (opts.only && opts.only !== name) continue;
    results.push(await run(name, opts));
  }
  const out = process.stdout;
  out.write(`generation bench: ${opts.tasks} tasks, server limit ${opts.rpm} rpm (burst 1 s), latency ${opts.latencyMs} ms, max in flight ${opts.inFlight}\n`);
  for (const r of results) {
    const rps = (r.tasks / r.elapsedMs) * 1000;
    out.write(
      `  ${r.name.padEnd(10)} ${r.tasks - r.failed}/${r.tasks} done in ${(r.elapsedMs / 1000).toFixed(2)} s ` +
        `(${rps.toFixed(2)} req/s vs limit ${(opts.rpm / 60).toFixed(2)} req/s); best possible ${(r.boundMs / 1000).toFixed(2)} s; ` +
        `throughput ${(r.fraction * 100).toFixed(1)}% of the rate-limit bound; ${r.rateLimited} x 429 in ${r.requests} requests` +
        (r.name === 'configured' ? (r.fraction >= TARGET && r.failed === 0 ? '  [meets target >= 0.90]' : '  [BELOW target 0.90]') : '  [information]') +
        '\n',
    );
  }
  const configured = results.find((r) => r.name === 'configured');
  if (configured && (configured.fraction < TARGET || configured.failed > 0)) process.exitCode = 1;
}

async function run(name: 'configured' | 'discovered', opts: BenchArgs): Promise<RunResult> {
  const server = await startRateLimitedServer(opts.rpm, opts.latencyMs);
  try {
    const entry = parseModelEntry({
      id: `bench-${name}`,
      provider: 'openai-compatible',
      model: 'bench-model',
      base_url: `${server.url}/v1`,
      params: { max_output_tokens: 64, temperature: 0 },
      prices: { input: 0, cached_input: 0, output: 0, as_of: '2026-11-29' },
      knowledge_cutoff: '2025-01',
      context_window: 8192,
      rate: name === 'configured' ? { rpm: opts.rpm, max_in_flight: opts.inFlight } : { max_in_flight: opts.inFlight },
    });
    const client = await createRunModelClient(entry, staticKeySource({}), { lanes: new RateLanes(), timeoutMs: 10_000 });
    const request = (i: number): ModelRequest => ({
      prompt: { text: `PAPER...\nTASK ${i}`, sharedPrefixChars: 9 },
      sample: 0,
      task: { paper: 'bench', file: 'f.py', snippet: `s${i}` },
    });
    const start = performance.now();
    const outcomes = await Promise.allSettled(Array.from({ length: opts.tasks }, (_, i) => client.complete(request(i))));
    const elapsedMs = performance.now() - start;
    const failed = outcomes.filter((o) => o.status === 'rejected').length;
    // The server's bucket starts full: at best `burst` answers at once, then one per 1/rate,
    // and the last answer arrives one latency after its admission.
    const burst = Math.max(1, opts.rpm / 60);
    const boundMs = (Math.max(0, opts.tasks - burst) / opts.rpm) * 60_000 + opts.latencyMs;
    return {
      name,
      tasks: opts.tasks,
      failed,
      elapsedMs,
      boundMs,
      fraction: Math.min(1, boundMs / elapsedMs),
      rateLimited: server.stats.rateLimited,
      requests: server.stats.requests,
    };
  } finally {
    await server.close();
  }
}

/** An OpenAI-compatible chat endpoint with a fixed latency and a token-bucket RPM limit. */
async function startRateLimitedServer(
  rpm: number,
  latencyMs: number,
): Promise<{ url: string; stats: { requests: number; rateLimited: number }; close(): Promise<void> }> {
  const rate = rpm / 60_000; // requests per ms
  const capacity = Math.max(1, rpm / 60);
  let level = capacity;
  let last = performance.now();
  const stats = { requests: 0, rateLimited: 0 };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      stats.requests++;
      const now = performance.now();
      level = Math.min(capacity, level + (now - last) * rate);
      last = now;
      if (level < 1) {
        stats.rateLimited++;
        const waitMs = Math.ceil((1 - level) / rate);
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': String(waitMs), 'retry-after': String(Math.ceil(waitMs / 1000)) });
        res.end(JSON.stringify({ error: { message: `Rate limit reached: ${rpm} requests per minute.`, type: 'requests', code: 'rate_limit_exceeded' } }));
        return;
      }
      level -= 1;
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: `chatcmpl-${stats.requests}`,
            object: 'chat.completion',
            model: 'bench-model',
            choices: [{ index: 0, message: { role: 'assistant', content: '```python\npass\n```' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
          }),
        );
      }, latencyMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function parseArgs(args: string[]): BenchArgs {
  const opts: BenchArgs = { tasks: 120, rpm: 600, latencyMs: 50, inFlight: 32 };
  for (let i = 0; i < args.length; i++) {
    const value = args[i + 1];
    const num = (): number => {
      const n = Number(value);
      if (!Number.isFinite(n) || n <= 0) throw new Error(`bench generation: ${args[i]} needs a positive number`);
      i++;
      return n;
    };
    switch (args[i]) {
      case '--tasks':
        opts.tasks = Math.floor(num());
        break;
      case '--rpm':
        opts.rpm = num();
        break;
      case '--latency':
        opts.latencyMs = num();
        break;
      case '--in-flight':
        opts.inFlight = Math.floor(num());
        break;
      case '--only':
        if (value !== 'configured' && value !== 'discovered') throw new Error('bench generation: --only configured|discovered');
        opts.only = value;
        i++;
        break;
      default:
        throw new Error(`bench generation: unknown argument ${args[i]}`);
    }
  }
  return opts;
}

if (require.main === module) {
  benchGeneration(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
