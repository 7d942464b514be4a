/**
 * Never paying twice for one answer when copies of a task's message are handled at the same
 * time: generateTask under the task's generation claim, and the generate handler fed by the
 * emulator's SQS lanes delivering every message twice, overlapping (both copies at once), on
 * the SQLite store and on DynamoRunStore against dynalite.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { ModelClient } from '../../core/model';
import type { RunStore } from '../../core/store';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { generateTask, GenerationInFlightError } from '../../core/cloud/generate-task';
import { RunContextCache, type RunContext } from '../../core/cloud/run-context';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { SimulatedLanes } from '../../emulator/sqs-lanes';
import { createHandler as createGenerate } from '../../app/stages/generate';
import { startDynalite, type LocalDynamo } from '../aws/local-servers';
import { cloudFixture, type CloudFixture } from './cloud-fixture';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A client that answers `ms` later, so that a second copy arrives while the call is in flight. */
function slow(client: ModelClient, ms: number): ModelClient {
  return {
    id: client.id,
    params: client.params,
    offline: client.offline,
    complete: async (req) => {
      await sleep(ms);
      return client.complete(req);
    },
  };
}

function calls(f: CloudFixture): number {
  return [...f.clients.values()].reduce((n, c) => n + c.calls, 0);
}

/** A planned cloud run of one paper of the example (of every paper with `papers` null). */
async function planned(store?: RunStore, papers: string[] | null = ['grouprms']): Promise<{ f: CloudFixture; store: RunStore; ctx: RunContext }> {
  const f = await cloudFixture({ papers: papers ?? undefined });
  const s = store ?? f.store;
  await planCloudRun({ store: s, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
  const ctx = await new RunContextCache({ store: s, blobs: f.blobs, scratchDir: f.scratchDir }).get(f.input.runId);
  return { f, store: s, ctx };
}

describe('generateTask under the generation claim', () => {
  it('calls nothing and fails with GenerationInFlightError while another worker holds the claim', async () => {
    const { f, store, ctx } = await planned();
    const message = f.queue.sent[0].message;
    await store.claimGeneration(message.taskId, 'other-worker', 60_000);

    await expect(generateTask({ store, clients: f.clients }, ctx, message)).rejects.toThrow(GenerationInFlightError);

    expect(calls(f)).toBe(0);
    expect((await store.getCompletions([message.taskId])).size).toBe(0);
    // Its claim is left as it was.
    expect(await store.claimGeneration(message.taskId, 'third', 60_000)).toBe(false);
  });

  it('calls the model once for two copies handled at once; the redelivered loser does nothing', async () => {
    const { f, store, ctx } = await planned();
    const message = f.queue.sent[0].message;
    const clients = new Map([...f.clients].map(([id, c]) => [id, slow(c, 20)]));

    const outcomes = await Promise.allSettled([generateTask({ store, clients }, ctx, message), generateTask({ store, clients }, ctx, message)]);

    expect(calls(f)).toBe(1);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.outcome : (o.reason as Error).name)).sort()).toEqual(['GenerationInFlightError', 'called']);
    expect((await generateTask({ store, clients }, ctx, message)).outcome).toBe('skipped');
    expect(calls(f)).toBe(1);
  });

  it('looks for the completion again once it holds the claim (the holder before it may just have finished)', async () => {
    // Prepare: the completion is stored between the first look and the claim.
    const { f, store, ctx } = await planned();
    const message = f.queue.sent[0].message;
    const other = await planned();
    await generateTask({ store: other.store, clients: other.f.clients }, other.ctx, message);
    const [answer] = (await other.store.getCompletions([message.taskId])).values();
    const claim = store.claimGeneration.bind(store);
    store.claimGeneration = async (...args) => {
      await store.putCompletion(answer);
      return claim(...args);
    };

    // Act
    const r = await generateTask({ store, clients: f.clients }, ctx, message);

    // Assess
    expect(r.outcome).toBe('skipped');
    expect(calls(f)).toBe(0);
    expect(await claim(message.taskId, 'next', 60_000)).toBe(true);
  });

  it('releases the claim when storing the completion fails, so a redelivery can retry at once', async () => {
    const { f, store, ctx } = await planned();
    const message = f.queue.sent[0].message;
    const put = store.putCompletion.bind(store);
    store.putCompletion = async () => {
      throw new Error('store unavailable');
    };

    await expect(generateTask({ store, clients: f.clients, claimOwner: 'w1' }, ctx, message)).rejects.toThrow('store unavailable');

    store.putCompletion = put;
    expect((await generateTask({ store, clients: f.clients, claimOwner: 'w2' }, ctx, message)).outcome).toBe('called');
  });

  it('takes over the claim of a worker that died once its lease has run out', async () => {
    // Prepare: a SQLite store with a clock; a worker claimed the task and never came back.
    let now = Date.parse('2025-01-01T00:00:00Z');
    const store = new SqliteRunStore(':memory:', { now: () => new Date(now) });
    const { f, ctx } = await planned(store);
    const message = f.queue.sent[0].message;
    await store.claimGeneration(message.taskId, 'dead-worker', 60_000);
    await expect(generateTask({ store, clients: f.clients }, ctx, message)).rejects.toThrow(GenerationInFlightError);

    // Act: the redelivery after the lease.
    now += 60_001;
    const r = await generateTask({ store, clients: f.clients }, ctx, message);

    // Assess
    expect(r.outcome).toBe('called');
    expect(calls(f)).toBe(1);
  });
});

let dynamo: LocalDynamo;
beforeAll(async () => {
  dynamo = await startDynalite();
});
afterAll(async () => {
  await dynamo.close();
});

describe.each([
  { name: 'SQLite', store: async (): Promise<RunStore | undefined> => undefined },
  { name: 'DynamoDB (dynalite)', store: async (): Promise<RunStore | undefined> => new DynamoRunStore(dynamo.doc, { tableName: await dynamo.createTable() }) },
])('generate handler on SimulatedLanes delivering every message twice, overlapping ($name)', ({ store: makeStore }) => {
  it('calls each model once per task, stores every completion and dead-letters nothing', async () => {
    // Prepare: the whole example (56 tasks), models that take a while to answer.
    const { f, store } = await planned(await makeStore(), null);
    const clients = new Map([...f.clients].map(([id, c]) => [id, slow(c, 5)]));
    const handler = createGenerate(() => ({
      store,
      blobs: f.blobs,
      cache: { get: async () => null, put: async () => undefined },
      scratchDir: f.scratchDir,
      keys: { get: async () => undefined },
      logger: new Logger({ logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'rcb-test' }),
      modelsFor: () => ({ clients, costs: new Map() }),
    }));
    const lanes = new SimulatedLanes(handler, { deliverTwice: 'overlapping', maxReceiveCount: 3 });

    // Act
    await lanes.send(f.queue.sent);
    await lanes.drained();

    // Assess
    const tasks = await store.listTasks(f.input.runId);
    expect(tasks).toHaveLength(56);
    expect(f.clients.get('oracle')!.calls).toBe(28);
    expect(f.clients.get('empty')!.calls).toBe(28);
    expect((await store.getCompletions(tasks.map((t) => t.taskId))).size).toBe(56);
    expect(lanes.stats.deadLettered).toEqual([]);
    // The copies did overlap: some found the claim taken and went back to the queue.
    expect(lanes.stats.failedRecords).toBeGreaterThan(0);
    expect(lanes.stats.delivered).toBe(112 + lanes.stats.failedRecords);
  });
});
