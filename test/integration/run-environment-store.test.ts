/**
 * Both RunStores keep a run's environment check (RunRecord.environment) and replace it when
 * a resumed run checks again; a run written before there was one loads without it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import type { RunStore } from '../../core/store';
import type { RunEnvironment } from '../../core/records';
import { startDynalite, type LocalDynamo } from '../aws/local-servers';
import { makeRun } from '../aws/records';

let local: LocalDynamo;

beforeAll(async () => {
  local = await startDynalite();
});

afterAll(async () => {
  await local.close();
});

const stores: [string, () => Promise<RunStore>][] = [
  ['SqliteRunStore', async () => new SqliteRunStore(join(mkdtempSync(join(tmpdir(), 'rcb-env-')), 'rcb.sqlite'))],
  ['DynamoRunStore', async () => new DynamoRunStore(local.doc, { tableName: await local.createTable() })],
];

const broken: RunEnvironment = {
  python: '/usr/bin/python3',
  papers: [
    { paper: 'DyT', runs: false, reason: 'missing module timm' },
    { paper: 'minp', runs: true, reason: null },
  ],
  checkedAt: '2026-12-01T08:00:00.000Z',
};

describe.each(stores)('%s run environment', (_, open) => {
  it('loads a run without one, records one, replaces it on a later check, and removes it', async () => {
    // Prepare
    const store = await open();
    const run = makeRun('run-1');
    await store.createRun(run);

    // Act
    const before = await store.getRun('run-1');
    await store.setRunEnvironment('run-1', broken);
    const first = await store.getRun('run-1');
    const fixed: RunEnvironment = { ...broken, papers: broken.papers.map((p) => ({ ...p, runs: true, reason: null })), checkedAt: '2026-12-02T08:00:00.000Z' };
    await store.setRunEnvironment('run-1', fixed);
    const second = await store.getRun('run-1');
    await store.setRunEnvironment('run-1', null);
    const cleared = await store.getRun('run-1');
    await store.close();

    // Assess
    expect(before).toEqual(run);
    expect(before).not.toHaveProperty('environment');
    expect(first).toEqual({ ...run, environment: broken });
    expect(second?.environment).toEqual(fixed);
    expect(cleared).toEqual(run);
  });
});
