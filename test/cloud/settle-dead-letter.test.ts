/**
 * A dead-lettered generation message settles its task: the dead-letter handler writes a
 * failed completion (first write wins), so CheckProgress counts the task settled and the
 * run is done generating instead of waiting for its deadline.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { checkProgress } from '../../core/cloud/check-progress';
import { settleDeadLetter } from '../../core/cloud/settle-dead-letter';
import { createHandler } from '../../app/stages/dead-letter';
import { makeCompletion } from '../aws/records';
import { cloudFixture } from './cloud-fixture';

/** Metrics kept and dropped: the EMF lines would fill the test output. */
class DroppedMetrics extends Metrics {
  override publishStoredMetrics(): this {
    this.clearMetrics();
    return this;
  }
}

const record = (body: string, receiveCount = 3): SQSRecord =>
  ({ messageId: `m-${Math.random()}`, body, attributes: { ApproximateReceiveCount: String(receiveCount) } }) as unknown as SQSRecord;

describe('dead-lettered generation messages', () => {
  it('become failed completions, and the run is then done generating', async () => {
    // Prepare: a planned run whose every task but one has a completion.
    const f = await cloudFixture({ papers: ['temperedattn'] });
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const [stuck, ...rest] = f.queue.sent.map((s) => s.message);
    for (const m of rest) await f.store.putCompletion(makeCompletion(m.taskId));
    expect((await checkProgress(f.store, f.input.runId)).done).toBe(false);
    const handler = createHandler(() => ({ store: f.store, logger: new Logger({ logLevel: 'SILENT' }), metrics: new DroppedMetrics({ namespace: 'test' }) }));

    // Act: the stuck task's message comes out of the DLQ, with a malformed neighbour.
    const response = await handler({ Records: [record(JSON.stringify(stuck), 3), record('not json')] });

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const completion = (await f.store.getCompletions([stuck.taskId])).get(stuck.taskId);
    expect(completion).toMatchObject({ finishReason: 'error', costUsd: 0, error: { kind: 'dead_lettered' } });
    expect(completion?.error?.message).toContain('3 deliveries');
    expect(await checkProgress(f.store, f.input.runId)).toMatchObject({ done: true, settled: rest.length + 1, failed: 1 });
  });

  it('leave a completion stored meanwhile as it is', async () => {
    // Prepare
    const f = await cloudFixture({ papers: ['temperedattn'] });
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const [m] = f.queue.sent.map((s) => s.message);
    await f.store.putCompletion(makeCompletion(m.taskId));
    const tasks = new Map((await f.store.listTasks(f.input.runId)).map((t) => [t.taskId, t]));

    // Act
    const outcome = await settleDeadLetter({ store: f.store, tasksOf: async () => tasks }, m, 3);
    const unknown = await settleDeadLetter({ store: f.store, tasksOf: async () => tasks }, { runId: f.input.runId, taskId: 'nope' });

    // Assess
    expect([outcome, unknown]).toEqual(['already_settled', 'unknown_task']);
    expect((await f.store.getCompletions([m.taskId])).get(m.taskId)?.error).toBeUndefined();
  });
});
