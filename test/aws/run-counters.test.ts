/**
 * Progress from counters on the run item (dynalite): PlanRun sets them from what is stored,
 * each settled task and each verdict adds to them atomically, and CheckProgress reads the
 * one item while tasks are unsettled, and the items only once the counters say done.
 */
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { checkProgress } from '../../core/cloud/check-progress';
import { generateTask } from '../../core/cloud/generate-task';
import { settleDeadLetter } from '../../core/cloud/settle-dead-letter';
import { RunContextCache } from '../../core/cloud/run-context';
import { cloudFixture } from '../cloud/cloud-fixture';
import { startDynalite, type LocalDynamo } from './local-servers';

let local: LocalDynamo;

beforeAll(async () => {
  local = await startDynalite();
});

afterAll(async () => {
  await local.close();
});

describe('run progress counters', () => {
  it('count settled tasks and failures atomically, and CheckProgress reads them instead of scanning until they say done', async () => {
    // Prepare: a planned run of one paper on DynamoDB.
    const f = await cloudFixture({ papers: ['temperedattn'] });
    const store = new DynamoRunStore(local.doc, { tableName: await local.createTable() });
    await planCloudRun({ store, counters: store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const total = f.queue.sent.length;
    expect(await store.getCounts(f.input.runId)).toEqual({ total, settled: 0, failed: 0, judged: 0 });
    const [deadOne, ...rest] = f.queue.sent.map((s) => s.message);
    const ctx = await new RunContextCache({ store, blobs: f.blobs, scratchDir: f.scratchDir }).get(f.input.runId);
    const scans = jest.spyOn(store, 'listTasks');

    // Act: all but one answered, concurrently; a check in between; then the last one dead-lettered.
    await Promise.all(rest.map((m) => generateTask({ store, counters: store, clients: f.clients }, ctx, m)));
    const midway = await checkProgress(store, f.input.runId, { counters: store });
    const scansMidway = scans.mock.calls.length;
    const tasks = new Map((await store.listTasks(f.input.runId)).map((t) => [t.taskId, t]));
    await settleDeadLetter({ store, counters: store, tasksOf: async () => tasks }, deadOne, 3);
    const end = await checkProgress(store, f.input.runId, { counters: store });

    // Assess
    expect(midway).toMatchObject({ done: false, total, settled: total - 1, failed: 0 });
    expect(scansMidway).toBe(0);
    expect(end).toMatchObject({ done: true, total, settled: total, failed: 1 });
    expect(await store.getCounts(f.input.runId)).toEqual({ total, settled: total, failed: 1, judged: 0 });
  });

  it('start from what is stored when a run is planned again', async () => {
    // Prepare: a run with two completions stored, counters lost (a run planned before they existed).
    const f = await cloudFixture({ papers: ['temperedattn'] });
    const store = new DynamoRunStore(local.doc, { tableName: await local.createTable() });
    await planCloudRun({ store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const ctx = await new RunContextCache({ store, blobs: f.blobs, scratchDir: f.scratchDir }).get(f.input.runId);
    for (const { message } of f.queue.sent.slice(0, 2)) await generateTask({ store, clients: f.clients }, ctx, message);
    expect(await store.getCounts(f.input.runId)).toBeNull();

    // Act
    await planCloudRun({ store, counters: store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);

    // Assess
    const total = (await store.listTasks(f.input.runId)).length;
    expect(await store.getCounts(f.input.runId)).toEqual({ total, settled: 2, failed: 0, judged: 0 });
  });
});
