/**
 * Budget correctness for failed calls, against real sockets: a call that never reached the
 * provider (connection refused, TLS handshake failed) costs nothing; error answers are
 * asked again when the run is resumed, up to a cap per task; the end of a run names each
 * error kind with its first message.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { loadPset } from '../../core/pset/read-pset';
import { planTasks } from '../../core/run/plan';
import { generate, MAX_ANSWER_ATTEMPTS, reopenFailedAnswers } from '../../core/run/generate';
import { summarizeErrors, formatErrorSummary } from '../../core/run/error-summary';
import { loadTemplate } from '../../core/prompt/template';
import { staticKeySource } from '../../core/keys';
import { verdictWithoutRun } from '../../core/judge';
import { createGeneratingRun } from '../helpers/model-fixtures';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { HostedModels } from '../../adapters/models/hosted-models';
import { parseModelEntry } from '../../adapters/models/registry';
import { PSET_MINI, REPO, rcb, tempDir } from '../helpers/cli';
import { startRcb } from '../reliability/run-cli';

const PAPER = 'adamlite';

/** Dear enough that a few worst cases would exhaust the budget: one reservation is about $1. */
function entry(baseUrl: string) {
  return {
    id: 'dear-model',
    provider: 'openai-compatible',
    model: 'dear',
    base_url: baseUrl,
    params: { max_output_tokens: 2000, temperature: 0 },
    prices: { input: 100, cached_input: 10, output: 400, as_of: '2026-11-29' },
    knowledge_cutoff: '2024-01',
    context_window: 100000,
    rate: { max_in_flight: 4 },
  };
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

interface Endpoint {
  server: Server;
  url: string;
  requests: number;
}

async function startEndpoint(): Promise<Endpoint> {
  const ep: Endpoint = { server: createServer(), url: '', requests: 0 };
  ep.server.on('request', (req, res) => {
    req.resume();
    req.on('end', () => {
      ep.requests++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c',
          object: 'chat.completion',
          created: 0,
          model: 'dear',
          choices: [{ index: 0, message: { role: 'assistant', content: '```python\n    pass\n```' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
        }),
      );
    });
  });
  await new Promise<void>((r) => ep.server.listen(0, '127.0.0.1', r));
  ep.url = `http://127.0.0.1:${(ep.server.address() as AddressInfo).port}/v1`;
  return ep;
}

function setup(baseUrl: string) {
  const pset = loadPset(PSET_MINI);
  const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
  const hosted = new HostedModels([parseModelEntry(entry(baseUrl))], staticKeySource({}), { retry: { baseDelayMs: 1, maxDelayMs: 2, maxAttempts: 3 } });
  const resolved = hosted.resolve('dear-model')!;
  const tasks = planTasks(pset, {
    models: [{ id: 'dear-model', params: resolved.client.params }],
    samples: 1,
    withPaper: true,
    promptTemplateDigest: template.digest,
  }).filter((t) => t.paper === PAPER);
  const deps = (store: SqliteRunStore) => ({ store, clients: new Map([['dear-model', resolved.client]]), costs: new Map([['dear-model', resolved.cost]]) });
  return { pset, template, resolved, tasks, deps };
}

async function createRun(store: SqliteRunStore, runId: string, budgetUsd: number | null) {
  await createGeneratingRun(store, runId, {
    psetDigest: 'x',
    psetRoot: '',
    models: [],
    samples: 1,
    withPaper: true,
    papers: null,
    promptTemplateDigest: '',
    timeoutSec: 60,
    budgetUsd,
  });
}

describe('a call that never reached the provider', () => {
  it('costs nothing: connection refused on every attempt leaves spend at 0 and the budget whole', async () => {
    // Prepare: a budget of a few worst cases; every attempt is refused.
    const { pset, template, resolved, tasks, deps } = setup(`http://127.0.0.1:${await closedPort()}/v1`);
    const worst = resolved.cost.worstCase({ text: 'x'.repeat(6000), sharedPrefixChars: 0 });
    const budget = worst * 3;
    const store = new SqliteRunStore(':memory:');
    await createRun(store, 'r', budget);

    // Act: every task, three attempts each.
    const result = await generate(deps(store), { runId: 'r', pset, template, withPaper: true, tasks, concurrency: 4 });

    // Assess
    expect(tasks.length).toBeGreaterThan(3);
    expect(result.budgetExhausted).toBe(false);
    expect(result.failed).toBe(tasks.length);
    const run = (await store.getRun('r'))!;
    expect(run.spentUsd).toBe(0);
    expect(run.reservedUsd).toBeCloseTo(0, 12);
    const answers = [...(await store.getCompletions(tasks.map((t) => t.taskId))).values()];
    expect(answers.every((c) => c.error?.kind === 'unreachable' && c.costUsd === 0 && !c.assumedCostUsd)).toBe(true);
    expect(answers[0].error!.message).toContain('ECONNREFUSED');
    await store.close();
  });

  it('costs nothing when the TLS handshake fails, and the server never sees a request', async () => {
    // Prepare: https:// to a plain HTTP server: the handshake fails before any request is written.
    const plain = await startEndpoint();
    const { pset, template, tasks, deps } = setup(plain.url.replace('http://', 'https://'));
    const store = new SqliteRunStore(':memory:');
    await createRun(store, 't', 10);
    try {
      // Act
      const result = await generate(deps(store), { runId: 't', pset, template, withPaper: true, tasks: tasks.slice(0, 2), concurrency: 2 });

      // Assess
      expect(result.failed).toBe(2);
      expect(plain.requests).toBe(0);
      const answers = [...(await store.getCompletions(tasks.slice(0, 2).map((t) => t.taskId))).values()];
      expect(answers.map((c) => c.error?.kind)).toEqual(['unreachable', 'unreachable']);
      expect((await store.getRun('t'))!.spentUsd).toBe(0);
    } finally {
      await store.close();
      plain.server.close();
    }
  });
});

describe('error answers on a resumed run', () => {
  it('are asked again, with their verdict dropped, and the new answer records its attempt', async () => {
    // Prepare: a first run with the provider unreachable, one verdict stored as the run would.
    const down = setup(`http://127.0.0.1:${await closedPort()}/v1`);
    const store = new SqliteRunStore(':memory:');
    await createRun(store, 'r', null);
    await generate(down.deps(store), { runId: 'r', pset: down.pset, template: down.template, withPaper: true, tasks: down.tasks, concurrency: 4 });
    await store.putVerdict('r', verdictWithoutRun(down.tasks[0].taskId, 'generation_error'));
    const ep = await startEndpoint();
    const up = setup(ep.url); // same id, model and parameters: the same task ids
    expect(up.tasks.map((t) => t.taskId)).toEqual(down.tasks.map((t) => t.taskId));
    try {
      // Act: resume.
      const reopened = await reopenFailedAnswers(store, 'r', up.tasks);
      const result = await generate(up.deps(store), {
        runId: 'r',
        pset: up.pset,
        template: up.template,
        withPaper: true,
        tasks: up.tasks,
        concurrency: 4,
        priorAttempts: reopened,
      });

      // Assess
      expect(reopened.size).toBe(up.tasks.length);
      expect(await store.listVerdicts('r')).toEqual([]);
      expect(result.called).toBe(up.tasks.length);
      expect(result.failed).toBe(0);
      expect(ep.requests).toBe(up.tasks.length);
      const answers = [...(await store.getCompletions(up.tasks.map((t) => t.taskId))).values()];
      expect(answers.every((c) => !c.error && c.attempt === 2)).toBe(true);
      expect((await store.getRun('r'))!.spentUsd).toBeGreaterThan(0);
      // A good answer is never reopened.
      expect((await reopenFailedAnswers(store, 'r', up.tasks)).size).toBe(0);
    } finally {
      await store.close();
      ep.server.close();
    }
  });

  it(`stop being asked again after ${MAX_ANSWER_ATTEMPTS} answers per task`, async () => {
    const down = setup(`http://127.0.0.1:${await closedPort()}/v1`);
    const tasks = down.tasks.slice(0, 2);
    const store = new SqliteRunStore(':memory:');
    await createRun(store, 'r', null);
    const input = { runId: 'r', pset: down.pset, template: down.template, withPaper: true, tasks, concurrency: 2 };

    // Act: the first run and every resume, until nothing is reopened.
    await generate(down.deps(store), input);
    const reopenedPerResume: number[] = [];
    for (let resume = 0; resume < MAX_ANSWER_ATTEMPTS + 1; resume++) {
      const reopened = await reopenFailedAnswers(store, 'r', tasks);
      reopenedPerResume.push(reopened.size);
      await generate(down.deps(store), { ...input, priorAttempts: reopened });
    }

    // Assess: MAX_ANSWER_ATTEMPTS - 1 resumes ask again, then the error answer stays.
    expect(reopenedPerResume).toEqual([2, 2, 0, 0]);
    const answers = [...(await store.getCompletions(tasks.map((t) => t.taskId))).values()];
    expect(answers.map((c) => c.attempt)).toEqual([MAX_ANSWER_ATTEMPTS, MAX_ANSWER_ATTEMPTS]);
    await store.close();
  });
});

describe('rcb run with the provider unreachable', () => {
  it('spends $0 of its budget, prints one line per error kind with the first message, and finishes the run on resume', async () => {
    // Prepare: a models file pointing the dear model at a closed port.
    const dir = tempDir('rcb-unreachable-');
    const port = await closedPort();
    const modelsFile = join(dir, 'models.yaml');
    const writeModels = (url: string) => writeFileSync(modelsFile, `models:\n  - ${JSON.stringify(entry(url))}\n`);
    writeModels(`http://127.0.0.1:${port}/v1`);
    const args = [
      'run',
      '--model',
      'dear-model',
      '--models-file',
      modelsFile,
      '--papers',
      PAPER,
      '--budget',
      '5',
      '--out',
      join(dir, 'run'),
      '--jobs',
      '1',
      '--executor',
      'cold',
    ];
    const env = { RCB_CACHE_DIR: join(dir, 'cache') };

    // Act
    const first = rcb(args, { env });

    // Assess
    expect(first.stdout).toContain('spend $0.0000');
    expect(first.stdout).toMatch(/run succeeded/);
    expect(first.stderr).toMatch(/generation errors: \d+ unreachable \(dear-model\); \d+ asked again when the run is resumed; first: .*ECONNREFUSED/);

    // Act: the provider is back (same model and parameters, so the same run); resume.
    const ep = await startEndpoint();
    try {
      writeModels(ep.url);
      // Not spawnSync: the endpoint in this process must answer while the run goes.
      const second = await startRcb(args, { env }).done;
      // Assess: every task asked again and answered; no error line.
      expect(second.stderr).not.toContain('generation errors');
      expect(ep.requests).toBeGreaterThan(0);
      expect(second.stdout).toMatch(/run succeeded .*: (\d+) model call\(s\), 0 answer\(s\) reused/);
    } finally {
      ep.server.close();
    }
  }, 120_000);
});

test('the error summary counts per kind, names the models and keeps the earliest message', () => {
  const c = (kind: string, model: string, at: string, message: string, attempt?: number) => ({
    taskId: at,
    model,
    text: '',
    usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 },
    costUsd: 0,
    finishReason: 'error' as const,
    error: { kind, message },
    latencyMs: 1,
    createdAt: at,
    ...(attempt ? { attempt } : {}),
  });
  const summary = summarizeErrors(
    [c('auth', 'b', '2026-01-02', 'no key'), c('unreachable', 'a', '2026-01-03', 'later'), c('unreachable', 'b', '2026-01-01', 'first\n  refused', 3)],
    3,
  );
  expect(summary).toEqual([
    { kind: 'unreachable', count: 2, models: ['a', 'b'], firstMessage: 'first\n  refused', retryable: 1 },
    { kind: 'auth', count: 1, models: ['b'], firstMessage: 'no key', retryable: 1 },
  ]);
  expect(formatErrorSummary(summary).split('\n')[0]).toBe(
    'generation errors: 2 unreachable (a, b); 1 asked again when the run is resumed; first: first refused',
  );
});
