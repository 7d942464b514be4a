/**
 * The cloud batch lane's rounds (core/cloud/batch-round.ts) on the cloud's own stores
 * (DynamoDB run store and batch ledger, on dynalite), against a local server in OpenAI's
 * batch wire format: PlanRun leaves batch-mode tasks out of the SQS lanes; each round
 * submits, polls once and returns (no waiting); a round finds what an earlier one left
 * pending in the ledger and never submits it again; answers are counted on the run item,
 * so CheckProgress sees them as it sees lane answers; expired requests go into a new batch
 * in the same round; a cancelled run cancels its batch; a budget too small for the batch
 * stops the run budget_exhausted instead of waiting for its deadline.
 */
import { readFileSync } from 'node:fs';
import { DynamoRunStore, DynamoCompletionCache } from '../../adapters/aws/dynamo-run-store';
import { DynamoBatchLedger } from '../../adapters/aws/dynamo-batch-ledger';
import { HostedModels } from '../../adapters/models/hosted-models';
import { parseModelEntry } from '../../adapters/models/registry';
import { staticKeySource } from '../../core/keys';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { resourcePath } from '../../core/util/package-root';
import { runId as computeRunId } from '../../core/ids';
import type { RunSpec } from '../../core/records';
import type { RunWorkflowInput } from '../../core/cloud/payloads';
import { uploadPromptTemplate, uploadPsetBundle } from '../../core/cloud/pset-bundle';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { checkProgress } from '../../core/cloud/check-progress';
import { RunContextCache } from '../../core/cloud/run-context';
import { batchRound, type BatchRoundDeps } from '../../core/cloud/batch-round';
import { MemoryBlobStore } from '../cloud/memory-blob-store';
import { ListQueue } from '../cloud/cloud-fixture';
import { answerBook } from '../../fakes/answer-book';
import { startFakeOpenAI, type FakeServer } from '../../fakes/fake-batch-servers';
import { PSET_MINI, tempDir } from '../helpers/cli';
import { startDynalite, type LocalDynamo } from './local-servers';

const pset = loadPset(PSET_MINI, { papers: ['adamlite'] });
const templatePath = resourcePath('prompt-template.txt');
const template = loadTemplate(templatePath);
let local: LocalDynamo;
let server: FakeServer;

beforeAll(async () => {
  local = await startDynalite();
  server = await startFakeOpenAI(answerBook(pset, template, true));
});
afterAll(async () => {
  await server.close();
  await local.close();
});
beforeEach(() => {
  server.backend.batches.length = 0;
  server.backend.plans = [];
  server.backend.resubmittedWhilePending.length = 0;
});

const entryOf = (url: string) =>
  parseModelEntry({
    id: 'fake-gpt',
    provider: 'openai',
    model: 'gpt-fake',
    base_url: `${url}/v1`,
    params: { max_output_tokens: 2000, temperature: 0 },
    prices: {
      input: 2,
      cached_input: 0.5,
      output: 8,
      as_of: '2026-12-01',
      batch: { input: 1, cached_input: 0.25, output: 4, as_of: '2026-12-01', source: 'https://developers.openai.com/api/docs/pricing' },
    },
    knowledge_cutoff: '2024-06',
    context_window: 1000000,
  });

/** A planned cloud run of fake-gpt (2 samples, one paper) with the model in batch mode, on a fresh table. */
async function plannedRun(budgetUsd: number | null = null, force = false) {
  const entry = entryOf(server.url);
  const hosted = new HostedModels([entry], staticKeySource({ OPENAI_API_KEY: 'test-key' }));
  const resolved = hosted.resolve(entry.id)!;
  const batch = hosted.resolveBatch(entry.id)!;
  const blobs = new MemoryBlobStore();
  const psetKey = await uploadPsetBundle(blobs, pset);
  await uploadPromptTemplate(blobs, readFileSync(templatePath, 'utf8'));
  const spec: RunSpec = {
    psetDigest: pset.digest,
    psetRoot: psetKey,
    models: [{ id: entry.id, params: resolved.client.params }],
    samples: 2,
    withPaper: true,
    papers: ['adamlite'],
    promptTemplateDigest: template.digest,
    timeoutSec: 60,
    budgetUsd,
  };
  const input: RunWorkflowInput = {
    runId: computeRunId(spec),
    spec,
    models: { [entry.id]: { config: {} } },
    batch: { models: [entry.id] },
    ...(force ? { force } : {}),
  };
  const tableName = await local.createTable();
  const store = new DynamoRunStore(local.doc, { tableName });
  const ledger = new DynamoBatchLedger(local.doc, { tableName });
  const queue = new ListQueue();
  const scratchDir = tempDir('rcb-batch-round-');
  const plan = await planCloudRun(
    { store, counters: store, blobs, queue, scratchDir, costs: new Map([[entry.id, resolved.cost]]), batchCosts: new Map([[entry.id, batch.cost]]) },
    input,
  );
  const ctx = await new RunContextCache({ store, blobs, scratchDir }).get(input.runId);
  const deps: BatchRoundDeps = {
    store,
    ledger,
    counters: store,
    cache: new DynamoCompletionCache(local.doc, { tableName }),
    batchClients: new Map([[entry.id, batch.client]]),
    batchCosts: new Map([[entry.id, batch.cost]]),
  };
  return { entry, store, ledger, queue, plan, ctx, deps, input, tasks: plan.taskCount };
}

describe('the cloud batch lane', () => {
  it('is left the batch-mode tasks, submits once, and a later round ingests what an earlier one left pending', async () => {
    // Prepare: the first batch is held (in progress) until released.
    server.backend.plans = [{ hold: true }];
    const r = await plannedRun(5);

    // Act: round 1 submits and polls once; round 2 finds it still pending; then it ends.
    const first = await batchRound(r.deps, r.ctx);
    const second = await batchRound(r.deps, r.ctx);
    const midway = await checkProgress(r.store, r.input.runId, { counters: r.store });
    server.backend.release(server.backend.batches[0].id);
    const third = await batchRound(r.deps, r.ctx);
    const end = await checkProgress(r.store, r.input.runId, { counters: r.store });

    // Assess
    expect(r.queue.sent).toEqual([]);
    expect(r.plan).toMatchObject({ enqueued: 0, batchTasks: r.tasks });
    expect(first).toMatchObject({ submitted: 1, pendingBatches: 1, open: r.tasks, settled: 0, waitSec: 60 });
    expect(second).toMatchObject({ submitted: 0, pendingBatches: 1, open: r.tasks });
    expect(server.backend.batches).toHaveLength(1);
    expect(server.backend.batches[0].polls).toBeGreaterThanOrEqual(2);
    expect(midway).toMatchObject({ done: false, settled: 0 });
    expect(third).toMatchObject({ submitted: 0, pendingBatches: 0, open: 0, settled: r.tasks });
    expect(end).toMatchObject({ done: true, total: r.tasks, settled: r.tasks, failed: 0 });
    expect(await r.store.getCounts(r.input.runId)).toMatchObject({ total: r.tasks, settled: r.tasks });
    expect((await r.ledger.listBatches(r.input.runId)).map((b) => b.state)).toEqual(['ingested']);
    const run = (await r.store.getRun(r.input.runId))!;
    expect(run.spentUsd).toBeCloseTo((r.tasks * (1000 * 1 + 100 * 4)) / 1e6, 9);
    expect(run.reservedUsd).toBeCloseTo(0, 9);
  });

  it('resubmits expired requests in the same round, and counts nothing twice', async () => {
    server.backend.plans = [{ fate: (i) => (i % 2 ? 'expired' : 'ok') }];
    const r = await plannedRun();

    const round = await batchRound(r.deps, r.ctx);
    const again = await batchRound(r.deps, r.ctx);

    expect(server.backend.batches).toHaveLength(2);
    expect(server.backend.batches[1].requests).toHaveLength(Math.floor(r.tasks / 2));
    expect(server.backend.resubmittedWhilePending).toEqual([]);
    expect(round).toMatchObject({ submitted: 2, pendingBatches: 0, open: 0, settled: r.tasks });
    expect(again).toMatchObject({ submitted: 0, pendingBatches: 0, open: 0, settled: 0 });
    expect(await r.store.getCounts(r.input.runId)).toMatchObject({ total: r.tasks, settled: r.tasks, failed: 0 });
  });

  it('cancels the pending batch of a cancelled run and keeps what it answered', async () => {
    server.backend.plans = [{ hold: true }];
    const r = await plannedRun();
    await batchRound(r.deps, r.ctx);

    await r.store.setRunStatus(r.input.runId, 'cancelled');
    const round = await batchRound(r.deps, r.ctx);

    expect(server.log).toContain(`POST /v1/batches/${server.backend.batches[0].id}/cancel`);
    expect(round).toMatchObject({ pendingBatches: 0, submitted: 0, open: Math.floor(r.tasks / 2), settled: Math.ceil(r.tasks / 2) });
    expect(server.backend.batches).toHaveLength(1);
    expect((await checkProgress(r.store, r.input.runId, { counters: r.store })).done).toBe(true);
  });

  it('stops the run budget_exhausted when the batch does not fit the budget, so the run settles', async () => {
    const r = await plannedRun(0.0001, true);

    const round = await batchRound(r.deps, r.ctx);

    expect(server.backend.batches).toHaveLength(0);
    expect(round).toMatchObject({ submitted: 0, pendingBatches: 0, open: r.tasks });
    expect((await r.store.getRun(r.input.runId))!.status).toBe('budget_exhausted');
    expect((await checkProgress(r.store, r.input.runId, { counters: r.store })).done).toBe(true);
  });

  it('an hour before the generation deadline cancels its pending batch, and past the deadline fails the run', async () => {
    // Prepare: a held batch under a 2 h deadline; then the clock moves past 1 h, then past 2 h.
    server.backend.plans = [{ hold: true }];
    const r = await plannedRun();
    const start = Date.parse(r.ctx.run.createdAt);
    let now = start;
    const deps: BatchRoundDeps = { ...r.deps, deadlineSec: 7200, now: () => new Date(now) };
    await batchRound(deps, r.ctx);
    // The provider is slow to cancel: the batch stays in progress.
    const cancel = server.backend.cancel;
    server.backend.cancel = (id) => server.backend.find(id);

    // Act
    let pastDeadline, afterGrace;
    try {
      now = start + 1.5 * 3600_000;
      pastDeadline = await batchRound(deps, r.ctx);
      now = start + 2.5 * 3600_000;
      afterGrace = await batchRound(deps, r.ctx).catch((e: Error) => e);
    } finally {
      server.backend.cancel = cancel;
    }

    // Assess
    expect(server.log).toContain(`POST /v1/batches/${server.backend.batches[0].id}/cancel`);
    expect(pastDeadline).toMatchObject({ pendingBatches: 1, submitted: 0, waitSec: 540 });
    expect(afterGrace).toBeInstanceOf(Error);
    expect((afterGrace as Error).message).toMatch(/the batch lane passed the generation deadline with 1 batch\(es\) still pending/);
    expect(server.backend.batches).toHaveLength(1);
  });

  it('submits nothing new for a run that stopped generating, but collects what its pending batch answers', async () => {
    server.backend.plans = [{ hold: true }];
    const r = await plannedRun();
    await batchRound(r.deps, r.ctx);
    // The lanes spent the budget meanwhile: the run is budget_exhausted.
    await r.store.setRunStatus(r.input.runId, 'budget_exhausted');
    server.backend.release(server.backend.batches[0].id);

    const round = await batchRound(r.deps, r.ctx);

    expect(round).toMatchObject({ pendingBatches: 0, submitted: 0, settled: r.tasks, open: 0 });
    expect(server.backend.batches).toHaveLength(1);
  });
});
