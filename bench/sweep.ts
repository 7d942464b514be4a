/**
 * The cost of a sweep, interactive vs batch: 3 registry models (gpt-4.1, claude-sonnet-4.6,
 * gemini-2.5-flash, at their registry prices) x 2 samples over examples/pset-mini, each
 * mode run through rcb's generation use cases against local servers in the providers'
 * interactive and batch wire formats (every answer reports 1000 input and 100 output
 * tokens). Prints, per mode: the spend recorded (registry prices), the registry estimate of
 * the same calls for the real prompts, the HTTP requests sent to the providers, and the
 * state transitions it took (budget reservations and settlements, answers stored, batch
 * ledger writes, polls), with the batch/interactive ratios.
 *
 *   npm run bench -- sweep [--samples 2] [--papers a,b]
 */
import { join } from 'node:path';
import { loadPset } from '../core/pset/read-pset';
import { buildPrompt, loadTemplate } from '../core/prompt/template';
import { openRun, planTasks } from '../core/run/plan';
import { generate } from '../core/run/generate';
import { generateBatches } from '../core/run/generate-batch';
import type { BatchLedger } from '../core/batch';
import type { RunStore } from '../core/store';
import type { RunSpec } from '../core/records';
import { staticKeySource } from '../core/keys';
import { packageRoot } from '../core/util/package-root';
import { SqliteRunStore } from '../adapters/local/sqlite-store';
import { SqliteBatchLedger } from '../adapters/local/sqlite-batch-ledger';
import { HostedModels } from '../adapters/models/hosted-models';
import { findModel, loadRegistry, parseModelEntry, type ModelEntry } from '../adapters/models/registry';
import { estimateModel } from '../adapters/models/estimate';
import { answerBook } from '../fakes/answer-book';
import { startFakeAnthropic, startFakeGemini, startFakeOpenAI, type FakeServer } from '../fakes/fake-batch-servers';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';

const MODELS = ['gpt-4.1', 'claude-sonnet-4.6', 'gemini-2.5-flash'];

interface ModeFigures {
  spentUsd: number;
  estimatedUsd: number;
  requests: number;
  transitions: number;
  detail: string;
}

/** Counts the store writes that move a task or the budget: reservations, settlements, answers. */
function countingStore(store: RunStore): { store: RunStore; writes: () => number } {
  let n = 0;
  const counted = new Set(['reserveBudget', 'settleBudget', 'putCompletion']);
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (counted.has(String(prop))) n++;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, writes: () => n };
}

export async function benchSweep(args: string[]): Promise<void> {
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const samples = Number(flag('--samples') ?? 2);
  const papers = flag('--papers')?.split(',') ?? null;
  const pset = loadPset(join(packageRoot(), 'examples', 'pset-mini'), papers ? { papers } : undefined);
  const template = loadTemplate(join(packageRoot(), 'resources', 'prompt-template.txt'));
  const answer = answerBook(pset, template, true);
  const servers: Record<string, FakeServer> = {
    openai: await startFakeOpenAI(answer),
    anthropic: await startFakeAnthropic(answer),
    gemini: await startFakeGemini(answer),
  };
  const registry = loadRegistry();
  try {
    const entries: ModelEntry[] = MODELS.map((id) => {
      const e = findModel(registry, id);
      const server = e.provider === 'anthropic' ? servers.anthropic : e.provider === 'gemini' ? servers.gemini : servers.openai;
      return parseModelEntry({ ...e, base_url: e.provider === 'openai' ? `${server.url}/v1` : server.url });
    });
    const hosted = new HostedModels(entries, staticKeySource({ OPENAI_API_KEY: 'test-key', ANTHROPIC_API_KEY: 'test-key', GEMINI_API_KEY: 'test-key' }));
    const spec: RunSpec = {
      psetDigest: pset.digest,
      psetRoot: pset.root,
      models: entries.map((e) => ({ id: e.id, params: hosted.resolve(e.id)!.client.params })),
      samples,
      withPaper: true,
      papers,
      promptTemplateDigest: template.digest,
      timeoutSec: 60,
      budgetUsd: null,
    };
    const tasks = planTasks(pset, spec);
    const groups = pset.papers.map((paper) => {
      const prompts = paper.snippets.map((s) => buildPrompt(template, paper, s, true));
      return {
        prefix: prompts[0].text.slice(0, prompts[0].sharedPrefixChars),
        suffixes: prompts.flatMap((p) => Array.from({ length: samples }, () => p.text.slice(p.sharedPrefixChars))),
      };
    });
    const estimates = entries.map((e) => estimateModel(e, groups));
    const requestsNow = () => Object.values(servers).reduce((a, s) => a + s.log.length, 0);
    const dir = mkdtempSync(join(tmpdir(), 'rcb-bench-sweep-'));
    const newRun = async (name: string) => {
      const file = join(dir, `${name}.sqlite`);
      const store = new SqliteRunStore(file);
      await openRun(store, { runId: 'r', spec, pset, models: {} });
      return { file, store };
    };

    // Interactive: every task one call through the resilient client and its lane.
    const i = await newRun('interactive');
    const ci = countingStore(i.store);
    const r0 = requestsNow();
    const started = Date.now();
    const gi = await generate(
      {
        store: ci.store,
        clients: new Map(entries.map((e) => [e.id, hosted.resolve(e.id)!.client])),
        costs: new Map(entries.map((e) => [e.id, hosted.resolve(e.id)!.cost])),
      },
      { runId: 'r', pset, template, withPaper: true, tasks, concurrency: 16 },
    );
    const interactive: ModeFigures = {
      spentUsd: (await i.store.getRun('r'))!.spentUsd,
      estimatedUsd: estimates.reduce((a, e) => a + e.usd, 0),
      requests: requestsNow() - r0,
      transitions: ci.writes(),
      detail: `${gi.called} call(s) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    };
    await i.store.close();

    // Batch: one batch per model, polled until it ends, ingested.
    const b = await newRun('batch');
    const cb = countingStore(b.store);
    const ledger = new SqliteBatchLedger(b.file);
    let ledgerWrites = 0;
    const countedLedger: BatchLedger = { putBatch: (rec) => (ledgerWrites++, ledger.putBatch(rec)), listBatches: (id) => ledger.listBatches(id) };
    const r1 = requestsNow();
    let polls = 0;
    const gb = await generateBatches(
      {
        store: cb.store,
        ledger: countedLedger,
        batchClients: new Map(entries.map((e) => [e.id, hosted.resolveBatch(e.id)!.client])),
        batchCosts: new Map(entries.map((e) => [e.id, hosted.resolveBatch(e.id)!.cost])),
        sleep: async () => undefined,
        onEvent: (e) => {
          if (e.type === 'polled') polls++;
        },
      },
      { runId: 'r', pset, template, withPaper: true, tasks, pollMs: 0 },
    );
    const batch: ModeFigures = {
      spentUsd: (await b.store.getRun('r'))!.spentUsd,
      estimatedUsd: estimates.reduce((a, e) => a + (e.batch?.usd ?? e.usd), 0),
      requests: requestsNow() - r1,
      transitions: cb.writes() + ledgerWrites + polls,
      detail: `${gb.answered} answer(s) from ${gb.submitted} batch(es); ${ledgerWrites} ledger write(s), ${polls} poll(s), ${cb.writes()} store write(s)`,
    };
    await b.store.close();
    ledger.close();

    const usd = (x: number) => `$${x.toFixed(4)}`;
    const lines = [
      `sweep: ${MODELS.join(', ')} x ${samples} sample(s) over ${pset.papers.length} paper(s): ${tasks.length} task(s); registry prices as of ${[...new Set(entries.map((e) => e.prices.as_of))].join(', ')} (batch: ${[...new Set(entries.map((e) => e.prices.batch?.as_of ?? '-'))].join(', ')})`,
      `mode         recorded spend  registry estimate  HTTP requests  state transitions  detail`,
      ...(
        [
          ['interactive', interactive],
          ['batch', batch],
        ] as const
      ).map(
        ([name, f]) =>
          `${name.padEnd(12)} ${usd(f.spentUsd).padEnd(15)} ${usd(f.estimatedUsd).padEnd(18)} ${String(f.requests).padEnd(14)} ${String(f.transitions).padEnd(18)} ${f.detail}`,
      ),
      `batch / interactive: recorded spend ${(batch.spentUsd / interactive.spentUsd).toFixed(3)}, registry estimate ${(batch.estimatedUsd / interactive.estimatedUsd).toFixed(3)}, HTTP requests ${(batch.requests / interactive.requests).toFixed(3)}, state transitions ${(batch.transitions / interactive.transitions).toFixed(3)}`,
      `(the interactive estimate counts prompt-cache reads; batch requests count none)`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.close()));
  }
}
