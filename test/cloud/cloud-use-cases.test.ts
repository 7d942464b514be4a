/**
 * The cloud use cases on the bundled example, in one process: plan, generate per message
 * (each delivered twice), check progress, evaluate per shard with the real executor,
 * aggregate; the result must equal a local run of the same spec.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestExecutor } from '../../core/executor';
import type { Prompt } from '../../core/model';
import { readPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { resourcePath } from '../../core/util/package-root';
import { buildReport } from '../../core/report/build-report';
import { runBenchmark } from '../../core/run/run-benchmark';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { createLocalExecutor } from '../../adapters/executor';
import { EmptyModel, OracleModel } from '../../adapters/models/offline';
import { createPsetBundle, materialisePsetBundle, loadBundledPset, RunInputError } from '../../core/cloud/pset-bundle';
import { BudgetExceededError, planCloudRun, readShardManifest } from '../../core/cloud/plan-cloud-run';
import { generateTask } from '../../core/cloud/generate-task';
import { checkProgress, GenerationTimeoutError } from '../../core/cloud/check-progress';
import { evaluateShard, ShardIncompleteError } from '../../core/cloud/evaluate-shard';
import { aggregateRun, IncompleteRunError } from '../../core/cloud/aggregate-run';
import { markRunFailed } from '../../core/cloud/mark-run-failed';
import { RunContextCache } from '../../core/cloud/run-context';
import { cloudKeys } from '../../core/cloud/payloads';
import { cloudFixture, counting, EXAMPLE, type CloudFixture } from './cloud-fixture';
import { expectCloudBoardLikeLocal } from '../helpers/cost-lines';

const PYTHON = '/usr/bin/python3';
let executor: TestExecutor;

beforeAll(async () => {
  executor = await createLocalExecutor({ python: PYTHON, jobs: 4 });
});
afterAll(async () => {
  await executor.close();
});

async function planAndGenerate(f: CloudFixture, deliveries = 1) {
  const plan = await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
  const contexts = new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir });
  const outcomes: string[] = [];
  for (const { message } of f.queue.sent) {
    for (let i = 0; i < deliveries; i++) {
      const ctx = await contexts.get(message.runId);
      outcomes.push((await generateTask({ store: f.store, clients: f.clients }, ctx, message)).outcome);
    }
  }
  return { plan, outcomes, contexts };
}

describe('pset bundle', () => {
  it('round-trips the example with the same digest, papers in scope only', () => {
    // Prepare
    const pset = readPset(EXAMPLE, { papers: ['adamlite', 'grouprms'] }).pset;
    const dir = mkdtempSync(join(tmpdir(), 'rcb-bundle-'));

    // Act
    const bundle = createPsetBundle(pset);
    materialisePsetBundle(bundle.body, dir);
    const again = readPset(dir, { papers: ['adamlite', 'grouprms'] });

    // Assess
    expect(bundle.key).toBe(`psets/${bundle.digest}.json`);
    expect(again.problems).toEqual([]);
    expect(again.pset.digest).toBe(pset.digest);
    expect(Object.keys(JSON.parse(bundle.body).files).some((k) => k.startsWith('smoothfocal/'))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a bundle with a path outside the pset', () => {
    const body = JSON.stringify({ format: 'rcb-pset-bundle/1', files: { '../evil.py': Buffer.from('x').toString('base64') } });
    expect(() => materialisePsetBundle(body, mkdtempSync(join(tmpdir(), 'rcb-bundle-')))).toThrow(/outside the pset/);
  });

  it('refuses a bundle whose digest differs from the run spec', async () => {
    const f = await cloudFixture();
    await expect(loadBundledPset(f.blobs, f.spec.psetRoot, f.scratchDir, { psetDigest: 'other', papers: null })).rejects.toThrow(RunInputError);
  });
});

describe('planCloudRun', () => {
  it('writes the run, its tasks and manifest, enqueues every task and lists one shard per paper and model', async () => {
    // Prepare
    const f = await cloudFixture();

    // Act
    const plan = await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);

    // Assess
    expect(plan).toEqual({
      runId: f.input.runId,
      taskCount: 56,
      enqueued: 56,
      estimatedCostUsd: 0,
      batchTasks: 0,
      shardCount: 8,
      shardManifestKey: cloudKeys.shardManifest(f.input.runId),
      deadlineSec: 24 * 3600,
    });
    // One shard per paper and model (core/cloud/shard-plan.ts), the models in spec order, in the manifest the Map reads.
    expect(await readShardManifest(f.blobs, plan.shardManifestKey)).toEqual(
      ['oracle', 'empty'].flatMap((model) => f.pset.papers.map((p) => ({ paper: p.meta.id, model }))),
    );
    expect((await f.store.getRun(f.input.runId))?.status).toBe('generating');
    expect(await f.store.listTasks(f.input.runId)).toHaveLength(56);
    expect(new Set(f.queue.sent.map((m) => m.message.taskId)).size).toBe(56);
    expect(await f.blobs.get(cloudKeys.planManifest(f.input.runId))).not.toBeNull();
  });

  it('re-planned after generation, enqueues nothing', async () => {
    const f = await cloudFixture();
    await planAndGenerate(f);
    f.queue.sent.length = 0;
    const plan = await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    expect(plan.enqueued).toBe(0);
    expect(f.queue.sent).toEqual([]);
  });

  it('refuses a run id that does not follow from its spec', async () => {
    const f = await cloudFixture();
    await expect(planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, { ...f.input, runId: 'forged' })).rejects.toThrow(
      /does not match its spec/,
    );
  });

  it('refuses a spec whose worst case exceeds the budget unless forced, before writing anything', async () => {
    // Prepare: the empty model priced at one cent per call, a budget of ten cents for 28 calls.
    const f = await cloudFixture({ budgetUsd: 0.1 });
    const costs = new Map([['empty', { worstCase: (_p: Prompt) => 0.01, billed: () => 0.005 }]]);
    const deps = { store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir, costs };

    // Act / Assess
    await expect(planCloudRun(deps, f.input)).rejects.toThrow(BudgetExceededError);
    expect(f.queue.sent).toEqual([]);
    expect(await f.store.listTasks(f.input.runId)).toEqual([]);
    const forced = await planCloudRun(deps, { ...f.input, force: true });
    expect(forced.estimatedCostUsd).toBeCloseTo(0.28);
  });
});

describe('generateTask', () => {
  it('answers each task once even when every message is delivered twice', async () => {
    // Prepare / Act
    const f = await cloudFixture();
    const { outcomes } = await planAndGenerate(f, 2);

    // Assess
    expect(outcomes.filter((o) => o === 'called')).toHaveLength(56);
    expect(outcomes.filter((o) => o === 'skipped')).toHaveLength(56);
    expect(f.clients.get('oracle')!.calls).toBe(28);
    expect(f.clients.get('empty')!.calls).toBe(28);
  });

  it('calls nothing for a cancelled run', async () => {
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    await f.store.setRunStatus(f.input.runId, 'cancelled');
    const ctx = await new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir }).get(f.input.runId);
    const r = await generateTask({ store: f.store, clients: f.clients }, ctx, f.queue.sent[0].message);
    expect(r.outcome).toBe('skipped');
    expect(f.clients.get('oracle')!.calls + f.clients.get('empty')!.calls).toBe(0);
  });

  it('marks the run budget_exhausted when a reservation does not fit, and then generation is done', async () => {
    // Prepare: room for two calls of the priced empty model.
    const f = await cloudFixture({ budgetUsd: 0.02 });
    const costs = new Map([['empty', { worstCase: () => 0.01, billed: () => 0.01 }]]);
    f.clients.set('empty', Object.assign(counting(new EmptyModel()), { offline: false }));
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir, costs }, { ...f.input, force: true });
    const ctx = await new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir }).get(f.input.runId);
    const emptyMessages = f.queue.sent.filter((m) => m.model === 'empty').map((m) => m.message);

    // Act
    const outcomes = [];
    for (const m of emptyMessages.slice(0, 4)) outcomes.push((await generateTask({ store: f.store, clients: f.clients, costs }, ctx, m)).outcome);

    // Assess
    expect(outcomes).toEqual(['called', 'called', 'budget_exhausted', 'skipped']);
    const run = await f.store.getRun(f.input.runId);
    expect(run?.status).toBe('budget_exhausted');
    expect(run?.spentUsd).toBeCloseTo(0.02);
    expect((await checkProgress(f.store, f.input.runId)).done).toBe(true);
  });

  it('rejects a message for a task that is not in the plan', async () => {
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const ctx = await new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir }).get(f.input.runId);
    await expect(generateTask({ store: f.store, clients: f.clients }, ctx, { runId: f.input.runId, taskId: 'nope' })).rejects.toThrow(RunInputError);
  });
});

describe('checkProgress', () => {
  it('is not done until every task has a completion, then moves the run to evaluating', async () => {
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    expect(await checkProgress(f.store, f.input.runId)).toEqual({ done: false, total: 56, settled: 0, failed: 0, waitSec: 30 });
    const f2 = f;
    const contexts = new RunContextCache({ store: f2.store, blobs: f2.blobs, scratchDir: f2.scratchDir });
    for (const { message } of f.queue.sent) await generateTask({ store: f.store, clients: f.clients }, await contexts.get(message.runId), message);
    expect(await checkProgress(f.store, f.input.runId)).toEqual({ done: true, total: 56, settled: 56, failed: 0, waitSec: 30 });
    expect((await f.store.getRun(f.input.runId))?.status).toBe('evaluating');
  });

  it('fails past the generation deadline', async () => {
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const later = () => new Date(Date.now() + 3_600_000);
    await expect(checkProgress(f.store, f.input.runId, { deadlineMs: 60_000, now: later })).rejects.toThrow(GenerationTimeoutError);
  });
});

describe('evaluateShard and aggregateRun', () => {
  it('give the same verdicts and leaderboard as a local run of the same spec', async () => {
    // Prepare: the cloud run, every message delivered twice.
    const f = await cloudFixture();
    const { plan, contexts } = await planAndGenerate(f, 2);
    expect((await checkProgress(f.store, f.input.runId)).done).toBe(true);
    const ctx = await contexts.get(f.input.runId);

    // Act
    for (const shard of await readShardManifest(f.blobs, plan.shardManifestKey)) {
      await evaluateShard({ store: f.store, blobs: f.blobs, executor }, { runId: f.input.runId, paper: shard.paper, pset: ctx.pset });
    }
    // A shard evaluated again (a retried task) tests nothing.
    const again = await evaluateShard(
      { store: f.store, blobs: f.blobs, executor },
      { runId: f.input.runId, paper: (await readShardManifest(f.blobs, plan.shardManifestKey))[0].paper, pset: ctx.pset },
    );
    const summary = await aggregateRun({ store: f.store, blobs: f.blobs }, f.input.runId);

    // Assess
    expect(again.judged).toBe(0);
    expect(summary).toEqual({ runId: f.input.runId, status: 'succeeded', reportPrefix: `runs/${f.input.runId}/reports/` });
    const local = new SqliteRunStore(':memory:');
    await runBenchmark(
      {
        store: local,
        clients: new Map<string, any>([
          ['oracle', new OracleModel(f.pset)],
          ['empty', new EmptyModel()],
        ]),
        executor,
      },
      {
        runId: f.input.runId,
        spec: { ...f.spec, psetRoot: EXAMPLE },
        pset: f.pset,
        template: loadTemplate(resourcePath('prompt-template.txt')),
        models: f.input.models,
        generationConcurrency: 8,
        clearStaleReservations: true,
      },
    );
    const pick = (vs: { taskId: string; officialPass: boolean; strictPass: boolean; failureClass: unknown }[]) =>
      vs
        .map((v) => ({ taskId: v.taskId, officialPass: v.officialPass, strictPass: v.strictPass, failureClass: v.failureClass }))
        .sort((a, b) => a.taskId.localeCompare(b.taskId));
    expect(pick(await f.store.listVerdicts(f.input.runId))).toEqual(pick(await local.listVerdicts(f.input.runId)));
    const localBoard = (await buildReport(local, f.input.runId, { format: 'table', judge: 'strict', subset: 'all' })).text;
    expectCloudBoardLikeLocal((await f.blobs.get(`${summary.reportPrefix}leaderboard.txt`))!.toString(), localBoard);
    expect(localBoard).toMatch(/oracle\s+100\.00/);
    expect((await f.store.getRun(f.input.runId))?.status).toBe('succeeded');
    expect(JSON.parse((await f.blobs.get(cloudKeys.shardVerdicts(f.input.runId, 'adamlite')))!.toString()).verdicts.length).toBeGreaterThan(0);
  });

  it("given the run's planned tasks, reads only its own tasks' answers and verdicts, never the run's lists", async () => {
    // Prepare: a run of two models, so each shard (paper x model) holds part of the run.
    const f = await cloudFixture({ papers: ['grouprms'] });
    const { plan, contexts } = await planAndGenerate(f);
    const ctx = await contexts.get(f.input.runId);
    const [shard] = await readShardManifest(f.blobs, plan.shardManifestKey);
    const listTasks = jest.spyOn(f.store, 'listTasks');
    const listVerdicts = jest.spyOn(f.store, 'listVerdicts');
    const getVerdicts = jest.spyOn(f.store, 'getVerdicts');

    // Act
    const result = await evaluateShard(
      { store: f.store, blobs: f.blobs, executor },
      { ...shard, runId: f.input.runId, pset: ctx.pset, runTasks: ctx.manifest.tasks, timeoutSec: ctx.run.spec.timeoutSec },
    );

    // Assess
    const mine = ctx.manifest.tasks.filter((t) => t.paper === shard.paper && t.model === shard.model).map((t) => t.taskId);
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.length).toBeLessThan(ctx.manifest.tasks.length);
    expect([listTasks.mock.calls.length, listVerdicts.mock.calls.length]).toEqual([0, 0]);
    expect(getVerdicts.mock.calls.map(([, ids]) => [...ids].sort())).toEqual([[...mine].sort(), [...mine].sort()]);
    expect(result).toMatchObject({ tasks: mine.length, judged: mine.length });
    expect((await f.store.listVerdicts(f.input.runId)).map((v) => v.taskId).sort()).toEqual([...mine].sort());
  });

  it('reports an executor failure as an incomplete shard, and a retry completes it', async () => {
    // Prepare: an executor that fails on the first candidate once.
    const f = await cloudFixture({ papers: ['grouprms'] });
    const { plan, contexts } = await planAndGenerate(f);
    const ctx = await contexts.get(f.input.runId);
    let failedOnce = false;
    const flaky: TestExecutor = {
      run: (candidates, onResult) =>
        executor.run(candidates, async (raw) => {
          if (!failedOnce) {
            failedOnce = true;
            return onResult?.({ ...raw, infraError: 'sandbox could not start' });
          }
          return onResult?.(raw);
        }),
      close: async () => undefined,
    };
    const shard = { runId: f.input.runId, paper: (await readShardManifest(f.blobs, plan.shardManifestKey))[0].paper, pset: ctx.pset };

    // Act / Assess
    await expect(evaluateShard({ store: f.store, blobs: f.blobs, executor: flaky }, shard)).rejects.toThrow(ShardIncompleteError);
    const retry = await evaluateShard({ store: f.store, blobs: f.blobs, executor: flaky }, shard);
    expect(retry.judged).toBe(1);
    expect((await aggregateRun({ store: f.store, blobs: f.blobs }, f.input.runId)).status).toBe('succeeded');
  });

  it('fails a run with tasks left unjudged, and keeps a budget-stopped run budget_exhausted', async () => {
    const f = await cloudFixture({ papers: ['grouprms'] });
    await planAndGenerate(f);
    await expect(aggregateRun({ store: f.store, blobs: f.blobs }, f.input.runId)).rejects.toThrow(IncompleteRunError);
    expect((await f.store.getRun(f.input.runId))?.status).toBe('failed');
    await f.store.setRunStatus(f.input.runId, 'budget_exhausted');
    expect((await aggregateRun({ store: f.store, blobs: f.blobs }, f.input.runId)).status).toBe('budget_exhausted');
  });
});

describe('markRunFailed', () => {
  it("records the failed state's error and cause on the run", async () => {
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    await markRunFailed(f.store, { runId: f.input.runId, failure: { Error: 'States.TaskFailed', Cause: 'shard adamlite exited 1' } });
    const run = await f.store.getRun(f.input.runId);
    expect(run?.status).toBe('failed');
    expect(run?.error).toBe('States.TaskFailed: shard adamlite exited 1');
  });
});
