/**
 * RunStore.reopenTask on both stores (SQLite, and DynamoDB on dynalite): an error answer is
 * dropped with the run's verdict on it, so a resumed run asks the model again and judges
 * the new answer; a good answer, or a task without one, stays as it is; a repeat reopens
 * nothing; verdicts of other runs on the same task stay.
 */
import type { RunStore } from '../../core/store';
import { reopenFailedAnswers } from '../../core/run/generate';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { startDynalite, type LocalDynamo } from './local-servers';
import { makeCompletion, makeTask, makeVerdict } from './records';

let local: LocalDynamo;
beforeAll(async () => {
  local = await startDynalite();
});
afterAll(() => local.close());

const stores: Array<[string, () => Promise<RunStore>]> = [
  ['SQLite', async () => new SqliteRunStore(':memory:')],
  ['DynamoDB', async () => new DynamoRunStore(local.doc, { tableName: await local.createTable() })],
];

describe.each(stores)('reopenTask on the %s store', (_name, open) => {
  it("drops an error answer and its verdict in the run, keeps good answers and other runs' verdicts", async () => {
    // Prepare
    const store = await open();
    const failed = { ...makeCompletion('t-err', ''), error: { kind: 'server', message: 'HTTP 500' }, finishReason: 'error' as const };
    await store.putCompletion(failed);
    await store.putCompletion(makeCompletion('t-ok', 'answer'));
    await store.putVerdict('run-1', makeVerdict('t-err', { officialPass: false, strictPass: false, failureClass: 'generation_error' }));
    await store.putVerdict('run-2', makeVerdict('t-err', { officialPass: false, strictPass: false, failureClass: 'generation_error' }));
    await store.putVerdict('run-1', makeVerdict('t-ok'));

    // Act
    const reopened = await store.reopenTask!('run-1', 't-err');
    const again = await store.reopenTask!('run-1', 't-err');
    const kept = await store.reopenTask!('run-1', 't-ok');
    const missing = await store.reopenTask!('run-1', 't-none');

    // Assess
    expect([reopened, again, kept, missing]).toEqual([true, false, false, false]);
    expect([...(await store.getCompletions(['t-err', 't-ok'])).keys()]).toEqual(['t-ok']);
    expect((await store.listVerdicts('run-1')).map((v) => v.taskId)).toEqual(['t-ok']);
    expect((await store.listVerdicts('run-2')).map((v) => v.taskId)).toEqual(['t-err']);
    // The task can be answered again, first write wins as before.
    expect(await store.putCompletion(makeCompletion('t-err', 'second try'))).toBe(true);
    expect(await store.putVerdict('run-1', makeVerdict('t-err'))).toBe(true);
    await store.close();
  });

  it('is what a resumed run uses to ask error answers again, up to the cap of answers per task', async () => {
    const store = await open();
    await store.putCompletion({ ...makeCompletion('t1', ''), error: { kind: 'timeout', message: 'no answer' }, finishReason: 'error' });
    await store.putCompletion({ ...makeCompletion('t2', ''), error: { kind: 'timeout', message: 'no answer' }, finishReason: 'error', attempt: 3 });

    const reopened = await reopenFailedAnswers(store, 'run-1', [makeTask('t1'), makeTask('t2')], 3);

    expect([...reopened]).toEqual([['t1', 1]]);
    expect([...(await store.getCompletions(['t1', 't2'])).keys()]).toEqual(['t2']);
    await store.close();
  });
});
