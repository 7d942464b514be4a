/**
 * Paid generation end to end in one process: the generate use case, a registry entry of
 * provider openai-compatible, the real resilient client and rate lanes, the SQLite store,
 * and a local HTTP endpoint in the Chat Completions wire format that fails on purpose.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { planTasks } from '../../core/run/plan';
import { generate } from '../../core/run/generate';
import { loadTemplate } from '../../core/prompt/template';
import { staticKeySource } from '../../core/keys';
import { costOf } from '../../core/cost';
import { createGeneratingRun } from '../helpers/model-fixtures';
import { SqliteCompletionCache, SqliteRunStore } from '../../adapters/local/sqlite-store';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { HostedModels } from '../../adapters/models/hosted-models';
import { parseModelEntry, type ModelEntry } from '../../adapters/models/registry';
import { PSET_MINI, REPO } from '../helpers/cli';
import { boundAfter, timed } from '../helpers/machine-speed';

const USAGE = { prompt_tokens: 1000, completion_tokens: 200 };

interface FakeEndpoint {
  server: Server;
  url: string;
  /** Successful (billed) responses, by the task marker in the prompt. */
  billed: number;
  requests: number;
  failureRate: number;
  /** Share of requests answered (and billed) only after `slowMs`, later than the client waits. */
  slowRate: number;
  slowMs: number;
  /** Answers not sent yet (the late ones wait out slowMs). */
  answering: Set<Promise<void>>;
}

async function startEndpoint(failureRate: number, slow: { rate: number; ms: number } = { rate: 0, ms: 0 }): Promise<FakeEndpoint> {
  const ep: FakeEndpoint = { server: createServer(), url: '', billed: 0, requests: 0, failureRate, slowRate: slow.rate, slowMs: slow.ms, answering: new Set() };
  ep.server.on('request', (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      ep.requests++;
      if (Math.random() < ep.failureRate) {
        const limited = Math.random() < 0.5;
        res.writeHead(limited ? 429 : 500, { 'content-type': 'application/json', ...(limited ? { 'retry-after': '0' } : {}) });
        res.end(JSON.stringify({ error: { message: limited ? 'rate limited' : 'server error', type: 'server_error' } }));
        return;
      }
      ep.billed++;
      JSON.parse(body);
      const delay = Math.random() < ep.slowRate ? ep.slowMs : 0;
      let answered!: () => void;
      const answer = new Promise<void>((resolve) => (answered = resolve));
      ep.answering.add(answer);
      void answer.then(() => ep.answering.delete(answer));
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: `chatcmpl-${ep.billed}`,
            object: 'chat.completion',
            created: 0,
            model: 'fake',
            choices: [{ index: 0, message: { role: 'assistant', content: '```python\n    pass\n```' }, finish_reason: 'stop' }],
            usage: { ...USAGE, total_tokens: USAGE.prompt_tokens + USAGE.completion_tokens },
          }),
        );
        answered();
      }, delay);
    });
  });
  await new Promise<void>((resolve) => ep.server.listen(0, '127.0.0.1', resolve));
  ep.url = `http://127.0.0.1:${(ep.server.address() as AddressInfo).port}/v1`;
  return ep;
}

function entryFor(url: string): ModelEntry {
  return parseModelEntry({
    id: 'fake-model',
    provider: 'openai-compatible',
    model: 'fake',
    base_url: url,
    api_key_env: 'FAKE_ENDPOINT_KEY',
    params: { max_output_tokens: 500, temperature: 0 },
    prices: { input: 1, cached_input: 0.1, output: 4, as_of: '2026-11-29' },
    knowledge_cutoff: '2024-01',
    context_window: 100000,
    rate: { max_in_flight: 8 },
  });
}

function setup(url: string, timeoutMs?: number) {
  const pset = loadPset(PSET_MINI);
  const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
  const entry = entryFor(url);
  const hosted = new HostedModels([entry], staticKeySource({ FAKE_ENDPOINT_KEY: 'k' }), { retry: { baseDelayMs: 2, maxDelayMs: 10 }, timeoutMs });
  const resolved = hosted.resolve('fake-model')!;
  const store = new SqliteRunStore(':memory:');
  const tasks = planTasks(pset, {
    models: [{ id: 'fake-model', params: resolved.client.params }],
    samples: 8,
    withPaper: true,
    promptTemplateDigest: template.digest,
  });
  return { pset, template, entry, resolved, store, tasks };
}

async function createRun(store: SqliteRunStore, runId: string, budgetUsd: number | null) {
  await createGeneratingRun(store, runId, {
    psetDigest: 'x',
    psetRoot: '',
    models: [],
    samples: 8,
    withPaper: true,
    papers: null,
    promptTemplateDigest: '',
    timeoutSec: 60,
    budgetUsd,
  });
}

describe('paid generation against a failing endpoint', () => {
  it('completes every task once, and records exactly the billed spend', async () => {
    // Prepare: 224 tasks, 30% of calls answered 429 or 500.
    const ep = await startEndpoint(0.3);
    const { pset, template, entry, resolved, store, tasks } = setup(ep.url);
    await createRun(store, 'r', null);
    try {
      // Act
      const result = await generate(
        { store, clients: new Map([['fake-model', resolved.client]]), costs: new Map([['fake-model', resolved.cost]]) },
        { runId: 'r', pset, template, withPaper: true, tasks, concurrency: 16 },
      );
      // Assess
      expect(tasks.length).toBeGreaterThanOrEqual(200);
      expect(result.failed).toBe(0);
      const completions = await store.getCompletions(tasks.map((t) => t.taskId));
      expect(completions.size).toBe(tasks.length);
      expect(ep.billed).toBe(tasks.length);
      expect(ep.requests).toBeGreaterThan(tasks.length);
      const perCall = costOf({ inputTokens: 1000, cachedInputTokens: 0, outputTokens: 200, reasoningTokens: 0 }, entry.prices);
      const run = (await store.getRun('r'))!;
      expect(run.spentUsd).toBeCloseTo(perCall * ep.billed, 9);
      expect(run.reservedUsd).toBeCloseTo(0, 9);
    } finally {
      await store.close();
      ep.server.close();
    }
  }, 120_000);
});

describe('a run under a budget', () => {
  it('never spends more than its budget, stops budget_exhausted, and resumes without repeating a call', async () => {
    const ep = await startEndpoint(0);
    const { pset, template, resolved, store, tasks } = setup(ep.url);
    // Budget for about half the tasks at their billed cost (reservations use the worst case).
    const perCallWorst = resolved.cost.worstCase({ text: 'x'.repeat(4000), sharedPrefixChars: 0 });
    const budget = (tasks.length / 2) * resolved.cost.billed({ inputTokens: 1000, cachedInputTokens: 0, outputTokens: 200, reasoningTokens: 0 });
    expect(perCallWorst).toBeGreaterThan(0);
    await createRun(store, 'b', budget);
    const deps = { store, clients: new Map([['fake-model', resolved.client]]), costs: new Map([['fake-model', resolved.cost]]) };
    try {
      // Act: 8 workers against the budget.
      const first = await generate(deps, { runId: 'b', pset, template, withPaper: true, tasks, concurrency: 8 });
      const afterFirst = (await store.getRun('b'))!;
      // Assess
      expect(first.budgetExhausted).toBe(true);
      expect(afterFirst.spentUsd).toBeLessThanOrEqual(budget + 1e-9);
      expect(afterFirst.reservedUsd).toBeCloseTo(0, 9);
      const done = (await store.getCompletions(tasks.map((t) => t.taskId))).size;
      expect(done).toBeGreaterThan(0);
      expect(done).toBeLessThan(tasks.length);
      expect(ep.billed).toBe(done);

      // Act: the same run with a higher budget.
      await store.setRunBudget('b', budget * 10);
      const second = await generate(deps, { runId: 'b', pset, template, withPaper: true, tasks, concurrency: 8 });
      // Assess: finished, and no task was asked twice.
      expect(second.budgetExhausted).toBe(false);
      expect(second.reused).toBe(done);
      expect(second.called).toBe(tasks.length - done);
      expect(ep.billed).toBe(tasks.length);
    } finally {
      await store.close();
      ep.server.close();
    }
  }, 120_000);
});

describe('paid generation when answers come later than the client waits', () => {
  it('counts each timed-out attempt at its worst case, so recorded spend covers what the provider billed', async () => {
    // Prepare: 20% of answers arrive after the client gave up; the server bills them anyway.
    // The client's timeout must leave an on-time answer room on a loaded machine (at 150 ms,
    // 400 ms and, under a load average of 30 to 40, 2 s, on-time answers timed out too, and a
    // task could fail all six attempts). So it is at least 2 s and LOAD_SLACK times a reference
    // measured just before: a round of 16 on-time calls at once (the run's concurrency) to the
    // same endpoint, which slows with the machine. Late answers come 4x later than the client
    // waits, so they are late on any machine.
    const ep = await startEndpoint(0);
    const reference = await timed(() =>
      Promise.all(
        Array.from({ length: 16 }, () =>
          fetch(`${ep.url}/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'fake', messages: [{ role: 'user', content: 'x'.repeat(4000) }] }),
          }).then((r) => r.text()),
        ),
      ),
    );
    const clientTimeoutMs = Math.max(2000, Math.ceil(boundAfter(0, reference.ms)));
    Object.assign(ep, { billed: 0, requests: 0, slowRate: 0.2, slowMs: 4 * clientTimeoutMs });
    const { pset, template, entry, resolved, store, tasks } = setup(ep.url, clientTimeoutMs);
    await createRun(store, 't', null);
    try {
      // Act
      const result = await generate(
        { store, clients: new Map([['fake-model', resolved.client]]), costs: new Map([['fake-model', resolved.cost]]) },
        { runId: 't', pset, template, withPaper: true, tasks, concurrency: 16 },
      );
      // Every late answer sent and billed (the provider's side of the calls the client gave up on).
      while (ep.answering.size) await Promise.all([...ep.answering]);
      // Assess
      expect(result.failed).toBe(0);
      const completions = [...(await store.getCompletions(tasks.map((t) => t.taskId))).values()];
      const assumed = completions.reduce((a, c) => a + (c.assumedCostUsd ?? 0), 0);
      expect(assumed).toBeGreaterThan(0);
      const perCall = costOf({ inputTokens: 1000, cachedInputTokens: 0, outputTokens: 200, reasoningTokens: 0 }, entry.prices);
      const run = (await store.getRun('t'))!;
      expect(run.spentUsd).toBeCloseTo(
        completions.reduce((a, c) => a + c.costUsd, 0),
        9,
      );
      expect(run.spentUsd).toBeGreaterThanOrEqual(perCall * ep.billed - 1e-9);
      expect(run.reservedUsd).toBeCloseTo(0, 9);
    } finally {
      await store.close();
      ep.server.close();
    }
  }, 600_000);
});

describe('the cross-run completion cache', () => {
  it('answers a task already bought by another run without calling the model', async () => {
    // Prepare: two runs in two stores (two run directories) sharing one cache file.
    const ep = await startEndpoint(0);
    const first = setup(ep.url);
    const second = setup(ep.url);
    const cache = new SqliteCompletionCache(join(mkdtempSync(join(tmpdir(), 'rcb-cache-')), 'completions.sqlite'));
    await createRun(first.store, 'one', null);
    await createRun(second.store, 'two', null);
    const clients = new Map([['fake-model', first.resolved.client]]);
    const costs = new Map([['fake-model', first.resolved.cost]]);
    const input = { pset: first.pset, template: first.template, withPaper: true, tasks: first.tasks, concurrency: 8 };
    try {
      // Act
      const a = await generate({ store: first.store, clients, costs, cache }, { ...input, runId: 'one' });
      const billedAfterFirst = ep.billed;
      const b = await generate({ store: second.store, clients, costs, cache }, { ...input, runId: 'two' });
      // Assess
      expect(a.called).toBe(first.tasks.length);
      expect(b.called).toBe(0);
      expect(b.reused).toBe(first.tasks.length);
      expect(ep.billed).toBe(billedAfterFirst);
      expect((await second.store.getCompletions(first.tasks.map((t) => t.taskId))).size).toBe(first.tasks.length);
    } finally {
      await first.store.close();
      await second.store.close();
      cache.close();
      ep.server.close();
    }
  }, 120_000);
});
