/**
 * DynamoRunStore against dynalite: the RunStore semantics of the SQLite store (first write
 * wins, atomic budget reservations, resumable runs) on a real DynamoDB API.
 */
import { BatchGetCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoCompletionCache, DynamoRunStore, ItemTooLargeError, runTableKey } from '../../adapters/aws/dynamo-run-store';
import { startDynalite, type LocalDynamo } from './local-servers';
import { makeCompletion, makeRun, makeTask, makeVerdict } from './records';

let local: LocalDynamo;
let tableName: string;
let store: DynamoRunStore;

beforeAll(async () => {
  local = await startDynalite();
});

afterAll(async () => {
  await local.close();
});

beforeEach(async () => {
  tableName = await local.createTable();
  store = new DynamoRunStore(local.doc, { tableName });
});

describe('DynamoRunStore runs', () => {
  it('createRun returns the stored record, and a second create keeps the first', async () => {
    // Prepare
    const first = makeRun('run-1', { budgetUsd: 5, psetRoot: 'first' });
    // Act
    const created = await store.createRun(first);
    const again = await store.createRun({ ...makeRun('run-1', { budgetUsd: 99, psetRoot: 'second' }), status: 'succeeded' });
    // Assess
    expect(created).toEqual(first);
    expect(again).toEqual(first);
    expect(await store.getRun('run-1')).toEqual(first);
  });

  it('getRun of an unknown run is null', async () => {
    expect(await store.getRun('nope')).toBeNull();
  });

  it('setRunStatus records the status and error, and a later status clears the error', async () => {
    await store.createRun(makeRun('run-1'));

    await store.setRunStatus('run-1', 'failed', 'evaluation shard paper-a crashed');
    const failed = await store.getRun('run-1');
    await store.setRunStatus('run-1', 'generating');
    const resumed = await store.getRun('run-1');

    expect(failed?.status).toBe('failed');
    expect(failed?.error).toBe('evaluation shard paper-a crashed');
    expect(failed?.updatedAt).not.toBe(makeRun('run-1').updatedAt);
    expect(resumed?.status).toBe('generating');
    expect(resumed).not.toHaveProperty('error');
  });

  it('updates of an unknown run create nothing', async () => {
    await store.setRunStatus('ghost', 'failed', 'x');
    await store.setRunBudget('ghost', 10);
    await store.settleBudget('ghost', 1, 1);
    await store.clearReservations('ghost');

    expect(await store.reserveBudget('ghost', 1)).toBe(false);
    expect(await store.getRun('ghost')).toBeNull();
    const raw = await local.doc.send(new GetCommand({ TableName: tableName, Key: runTableKey.run('ghost') }));
    expect(raw.Item).toBeUndefined();
  });

  it('listRuns returns runs newest first', async () => {
    await store.createRun(makeRun('old', { createdAt: '2026-01-01T00:00:00.000Z' }));
    await store.createRun(makeRun('new', { createdAt: '2026-03-01T00:00:00.000Z' }));
    await store.createRun(makeRun('mid', { createdAt: '2026-02-01T00:00:00.000Z' }));

    expect((await store.listRuns()).map((r) => r.runId)).toEqual(['new', 'mid', 'old']);
    expect((await store.listRuns(2)).map((r) => r.runId)).toEqual(['new', 'mid']);
  });
});

describe('DynamoRunStore tasks', () => {
  it('putTasks twice keeps the first tasks, their order and their count, and appends new ones', async () => {
    const firstBatch = ['t1', 't2', 't3', 't4', 't5'].map((id) => makeTask(id));

    await store.putTasks('run-1', firstBatch);
    await store.putTasks('run-1', [makeTask('t3', { paper: 'changed' }), makeTask('t6'), makeTask('t1', { loc: 99 }), makeTask('t7')]);
    await store.putTasks('run-1', firstBatch);

    const tasks = await store.listTasks('run-1');
    expect(tasks.map((t) => t.taskId)).toEqual(['t1', 't2', 't3', 't4', 't5', 't6', 't7']);
    expect(tasks[0]).toEqual(makeTask('t1'));
    expect(tasks[2]).toEqual(makeTask('t3'));
  });

  it('a task written by another planner after the existence check is not overwritten', async () => {
    // Prepare: the existence check sees nothing, as if a racing planner wrote t1 just after it.
    await store.putTasks('run-1', [makeTask('t1')]);
    const send = local.doc.send.bind(local.doc);
    const spy = jest
      .spyOn(local.doc, 'send')
      .mockImplementation(((command: unknown) =>
        command instanceof BatchGetCommand ? Promise.resolve({ Responses: {} }) : send(command as never)) as typeof local.doc.send);
    // Act
    await store.putTasks('run-1', [makeTask('t1', { paper: 'overwritten' }), makeTask('t2')]);
    spy.mockRestore();
    // Assess
    expect(await store.listTasks('run-1')).toEqual([makeTask('t1'), makeTask('t2')]);
  });

  it('a task repeated within one call is stored once, as first given', async () => {
    await store.putTasks('run-1', [makeTask('a'), makeTask('b'), makeTask('a', { snippet: 'later' })]);

    expect(await store.listTasks('run-1')).toEqual([makeTask('a'), makeTask('b')]);
  });

  it('getTask reads one task of a run by id', async () => {
    await store.putTasks('run-1', [makeTask('a'), makeTask('b', { sample: 3 })]);

    expect(await store.getTask('run-1', 'b')).toEqual(makeTask('b', { sample: 3 }));
    expect(await store.getTask('run-2', 'b')).toBeNull();
    expect(await store.getTask('run-1', 'c')).toBeNull();
  });

  it('tasks of two runs are kept apart', async () => {
    await store.putTasks('run-1', [makeTask('a')]);
    await store.putTasks('run-2', [makeTask('b'), makeTask('a')]);

    expect((await store.listTasks('run-1')).map((t) => t.taskId)).toEqual(['a']);
    expect((await store.listTasks('run-2')).map((t) => t.taskId)).toEqual(['b', 'a']);
  });

  it('listTasks reads every page of a run larger than one 1 MB query page, in order', async () => {
    // Prepare: 150 tasks of about 8 KB each, about 1.2 MB in all.
    const padding = 'x'.repeat(8000);
    const tasks = Array.from({ length: 150 }, (_, i) => makeTask(`task-${String(149 - i).padStart(4, '0')}`, { file: `${padding}/${i}.py`, sample: i }));
    await store.putTasks('big', tasks);
    const send = jest.spyOn(local.doc, 'send');
    // Act
    const listed = await store.listTasks('big');
    // Assess: the sort key order (task ids) is the reverse of the put order.
    const queries = send.mock.calls.filter(([command]) => command instanceof QueryCommand).length;
    send.mockRestore();
    expect(queries).toBeGreaterThan(1);
    expect(listed).toHaveLength(150);
    expect(listed.map((t) => t.sample)).toEqual(tasks.map((t) => t.sample));
  });
});

describe('DynamoRunStore completions', () => {
  it('putCompletion is first write wins', async () => {
    const first = makeCompletion('t1', 'first answer');

    const stored = await store.putCompletion(first);
    const repeated = await store.putCompletion({ ...makeCompletion('t1', 'second answer'), costUsd: 9 });

    expect(stored).toBe(true);
    expect(repeated).toBe(false);
    expect((await store.getCompletions(['t1'])).get('t1')).toEqual(first);
  });

  it('completions are shared across runs and fetched more than 100 at a time', async () => {
    const ids = Array.from({ length: 130 }, (_, i) => `t${i}`);
    await Promise.all(ids.map((id) => store.putCompletion(makeCompletion(id))));

    const wanted = [...ids, 'missing-1', 't5', 'missing-2'];
    const found = await store.getCompletions(wanted);

    expect([...found.keys()]).toEqual(ids);
    expect(found.get('t129')).toEqual(makeCompletion('t129'));
  });

  it('an empty request reads nothing', async () => {
    expect((await store.getCompletions([])).size).toBe(0);
  });

  it('a completion over the DynamoDB item limit is refused with an error naming the task', async () => {
    await expect(store.putCompletion(makeCompletion('huge', 'y'.repeat(420 * 1024)))).rejects.toThrow(ItemTooLargeError);
    await expect(store.putCompletion(makeCompletion('huge', 'y'.repeat(420 * 1024)))).rejects.toThrow(/task huge/);
  });

  it('DynamoCompletionCache reads and writes the store’s completions', async () => {
    const cache = new DynamoCompletionCache(local.doc, { tableName });
    await store.putCompletion(makeCompletion('from-store'));

    await cache.put(makeCompletion('from-cache', 'cached'));
    await cache.put(makeCompletion('from-cache', 'ignored'));

    expect(await cache.get('from-store')).toEqual(makeCompletion('from-store'));
    expect((await store.getCompletions(['from-cache'])).get('from-cache')?.text).toBe('cached');
    expect(await cache.get('absent')).toBeNull();
  });
});

describe('DynamoRunStore verdicts', () => {
  it('putVerdict is first write wins within a run, and runs are independent', async () => {
    const pass = makeVerdict('t1');
    const fail = makeVerdict('t1', { officialPass: false, strictPass: false, failureClass: 'functional', exitCode: 1 });

    expect(await store.putVerdict('run-1', pass)).toBe(true);
    expect(await store.putVerdict('run-1', fail)).toBe(false);
    expect(await store.putVerdict('run-2', fail)).toBe(true);

    expect(await store.listVerdicts('run-1')).toEqual([pass]);
    expect(await store.listVerdicts('run-2')).toEqual([fail]);
  });

  it('listVerdicts reads every page', async () => {
    // 20 verdicts with 60 KB of output each: about 1.2 MB, more than one query page.
    const log = { text: 'z'.repeat(60 * 1024), totalBytes: 60 * 1024, truncated: false };
    const ids = Array.from({ length: 20 }, (_, i) => `v${String(i).padStart(2, '0')}`);
    for (const id of ids) await store.putVerdict('run-1', makeVerdict(id, { stdout: log }));
    const send = jest.spyOn(local.doc, 'send');

    const verdicts = await store.listVerdicts('run-1');

    const queries = send.mock.calls.filter(([command]) => command instanceof QueryCommand).length;
    send.mockRestore();
    expect(queries).toBeGreaterThan(1);
    expect(verdicts.map((v) => v.taskId)).toEqual(ids);
    expect(verdicts[19].stdout.text).toHaveLength(60 * 1024);
  });
});

describe('DynamoRunStore budget', () => {
  it('50 concurrent reservations of $1 on a $20 budget: exactly 20 succeed, and settling adds the billed amounts', async () => {
    // Prepare
    await store.createRun(makeRun('run-1', { budgetUsd: 20 }));
    // Act
    const results = await Promise.all(Array.from({ length: 50 }, () => store.reserveBudget('run-1', 1)));
    const reserved = await store.getRun('run-1');
    const billed = Array.from({ length: 20 }, (_, i) => 0.01 * (i + 1) + 0.0037);
    await Promise.all(billed.map((usd) => store.settleBudget('run-1', 1, usd)));
    const settled = await store.getRun('run-1');
    // Assess
    expect(results.filter(Boolean)).toHaveLength(20);
    expect(reserved?.reservedUsd).toBe(20);
    expect(settled?.reservedUsd).toBe(0);
    expect(settled?.spentUsd).toBeCloseTo(
      billed.reduce((a, b) => a + b, 0),
      9,
    );
  });

  it('a reservation that would pass the budget fails', async () => {
    await store.createRun(makeRun('run-1', { budgetUsd: 0.3 }));

    const fits = [await store.reserveBudget('run-1', 0.1), await store.reserveBudget('run-1', 0.2)];
    const over = await store.reserveBudget('run-1', 0.000001);

    expect(fits).toEqual([true, true]);
    expect(over).toBe(false);
  });

  it('a reservation over the budget by float rounding only (below 1e-9) succeeds, as in SQLite', async () => {
    await store.createRun(makeRun('run-1', { budgetUsd: 0.3 }));

    expect(await store.reserveBudget('run-1', 0.1 + 0.2)).toBe(true);
  });

  it('settled spend counts against the budget', async () => {
    await store.createRun(makeRun('run-1', { budgetUsd: 10 }));
    await store.reserveBudget('run-1', 6);
    await store.settleBudget('run-1', 6, 8);

    expect(await store.reserveBudget('run-1', 2.5)).toBe(false);
    expect(await store.reserveBudget('run-1', 2)).toBe(true);
  });

  it('a run without a budget always reserves', async () => {
    await store.createRun(makeRun('run-1'));

    const results = await Promise.all(Array.from({ length: 10 }, () => store.reserveBudget('run-1', 1000)));

    expect(results.every(Boolean)).toBe(true);
    expect((await store.getRun('run-1'))?.reservedUsd).toBe(10000);
  });

  it('raising the budget lets reservations resume; removing it lifts the cap; lowering it stops them', async () => {
    await store.createRun(makeRun('run-1', { budgetUsd: 2 }));
    await store.reserveBudget('run-1', 1);
    await store.settleBudget('run-1', 1, 1.5);
    expect(await store.reserveBudget('run-1', 1)).toBe(false);

    await store.setRunBudget('run-1', 5);
    const afterRaise = [await store.reserveBudget('run-1', 3), await store.reserveBudget('run-1', 1)];
    await store.setRunBudget('run-1', null);
    const uncapped = await store.reserveBudget('run-1', 100);
    await store.setRunBudget('run-1', 50);
    const afterLower = await store.reserveBudget('run-1', 0.01);

    expect(afterRaise).toEqual([true, false]);
    expect(uncapped).toBe(true);
    expect(afterLower).toBe(false);
    const run = await store.getRun('run-1');
    expect(run?.spec.budgetUsd).toBe(50);
    expect(run?.spentUsd).toBe(1.5);
    expect(run?.reservedUsd).toBe(103);
  });

  it('clearReservations drops reservations and keeps the spend', async () => {
    await store.createRun(makeRun('run-1', { budgetUsd: 15 }));
    await store.reserveBudget('run-1', 5);
    await store.settleBudget('run-1', 5, 4);
    await store.reserveBudget('run-1', 5);
    await store.reserveBudget('run-1', 5);
    expect(await store.reserveBudget('run-1', 5)).toBe(false);

    await store.clearReservations('run-1');

    const run = await store.getRun('run-1');
    expect(run?.reservedUsd).toBe(0);
    expect(run?.spentUsd).toBe(4);
    expect(await store.reserveBudget('run-1', 11)).toBe(true);
    expect(await store.reserveBudget('run-1', 0.5)).toBe(false);
  });

  it('settling after the reservations were cleared never takes the reserved amount below 0', async () => {
    await store.createRun(makeRun('run-1', { budgetUsd: 10 }));
    await store.reserveBudget('run-1', 4);
    await store.clearReservations('run-1');
    await store.reserveBudget('run-1', 1);

    await store.settleBudget('run-1', 4, 3);

    const run = await store.getRun('run-1');
    expect(run?.reservedUsd).toBe(0);
    expect(run?.spentUsd).toBe(3);
    expect(await store.reserveBudget('run-1', 7.5)).toBe(false);
    expect(await store.reserveBudget('run-1', 7)).toBe(true);
  });
  it('concurrent settlements after cleared reservations all count, and none takes reserved below 0', async () => {
    await store.createRun(makeRun('run-1', { budgetUsd: 100 }));
    await Promise.all(Array.from({ length: 5 }, () => store.reserveBudget('run-1', 4)));
    await store.clearReservations('run-1');
    await store.reserveBudget('run-1', 2);

    await Promise.all(Array.from({ length: 5 }, () => store.settleBudget('run-1', 4, 3)));

    const run = await store.getRun('run-1');
    expect(run?.reservedUsd).toBe(0);
    expect(run?.spentUsd).toBe(15);
    expect(await store.reserveBudget('run-1', 85.5)).toBe(false);
    expect(await store.reserveBudget('run-1', 85)).toBe(true);
  });
});

describe('DynamoRunStore resume', () => {
  it('a new store on the same table sees the run, its tasks, completions and verdicts', async () => {
    await store.createRun(makeRun('run-1', { budgetUsd: 10 }));
    await store.putTasks('run-1', [makeTask('t2'), makeTask('t1')]);
    await store.putCompletion(makeCompletion('t1'));
    await store.putVerdict('run-1', makeVerdict('t1'));
    await store.reserveBudget('run-1', 2);
    await store.close();

    const resumed = new DynamoRunStore(local.doc, { tableName });

    expect((await resumed.getRun('run-1'))?.reservedUsd).toBe(2);
    expect((await resumed.listTasks('run-1')).map((t) => t.taskId)).toEqual(['t2', 't1']);
    expect((await resumed.getCompletions(['t1', 't2'])).get('t1')).toEqual(makeCompletion('t1'));
    expect(await resumed.listVerdicts('run-1')).toEqual([makeVerdict('t1')]);
    await resumed.putTasks('run-1', [makeTask('t1'), makeTask('t3')]);
    expect((await resumed.listTasks('run-1')).map((t) => t.taskId)).toEqual(['t2', 't1', 't3']);
    expect(await resumed.putCompletion(makeCompletion('t1', 'again'))).toBe(false);
  });
});

describe('DynamoRunStore expiry', () => {
  it('with runTtlDays, run-scoped items carry expiresAt and completions do not', async () => {
    const now = new Date('2026-01-01T00:00:00.000Z');
    const ttlStore = new DynamoRunStore(local.doc, { tableName, runTtlDays: 30, now: () => now });
    const expected = now.getTime() / 1000 + 30 * 86400;

    await ttlStore.createRun(makeRun('run-1'));
    await ttlStore.putTasks('run-1', [makeTask('t1')]);
    await ttlStore.putVerdict('run-1', makeVerdict('t1'));
    await ttlStore.putCompletion(makeCompletion('t1'));

    const get = async (key: { pk: string; sk: string }) =>
      (await local.doc.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }))).Item?.expiresAt;
    expect(await get(runTableKey.run('run-1'))).toBe(expected);
    expect(await get(runTableKey.task('run-1', 't1'))).toBe(expected);
    expect(await get(runTableKey.taskCounter('run-1'))).toBe(expected);
    expect(await get(runTableKey.verdict('run-1', 't1'))).toBe(expected);
    expect(await get(runTableKey.completion('t1'))).toBeUndefined();
  });
});
