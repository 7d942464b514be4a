/**
 * DynamoRunStore.reopenTask against dynalite: the RunStore contract a restarted run uses
 * (core/run/generate.ts reopenFailedAnswers, PlanRun in the cloud): an error answer and the
 * task's verdict in the run go, an answer never does, and a repeat reopens nothing.
 */
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { startDynalite, type LocalDynamo } from './local-servers';
import { makeCompletion, makeRun, makeVerdict } from './records';

let local: LocalDynamo;
let store: DynamoRunStore;

beforeAll(async () => {
  local = await startDynalite();
});
afterAll(async () => {
  await local.close();
});
beforeEach(async () => {
  store = new DynamoRunStore(local.doc, { tableName: await local.createTable() });
  await store.createRun(makeRun('run-1'));
});

describe('DynamoRunStore.reopenTask', () => {
  it('deletes an error answer and the task\'s verdict in the run, once', async () => {
    // Prepare
    await store.putCompletion({ ...makeCompletion('t1', ''), finishReason: 'error', error: { kind: 'dead_lettered', message: 'x' } });
    await store.putVerdict('run-1', makeVerdict('t1', { failureClass: 'generation_error', officialPass: false, strictPass: false }));
    await store.putVerdict('run-1', makeVerdict('t2'));

    // Act
    const first = await store.reopenTask('run-1', 't1');
    const again = await store.reopenTask('run-1', 't1');

    // Assess
    expect([first, again]).toEqual([true, false]);
    expect((await store.getCompletions(['t1'])).size).toBe(0);
    expect((await store.listVerdicts('run-1')).map((v) => v.taskId)).toEqual(['t2']);
    // The task is open: its next answer is stored.
    expect(await store.putCompletion(makeCompletion('t1'))).toBe(true);
  });

  it('never reopens a task that has an answer, nor one that has none', async () => {
    await store.putCompletion(makeCompletion('t1'));
    await store.putVerdict('run-1', makeVerdict('t1'));

    expect(await store.reopenTask('run-1', 't1')).toBe(false);
    expect(await store.reopenTask('run-1', 'nothing')).toBe(false);
    expect((await store.getCompletions(['t1'])).get('t1')?.text).toBe(makeCompletion('t1').text);
    expect(await store.listVerdicts('run-1')).toHaveLength(1);
  });
});
