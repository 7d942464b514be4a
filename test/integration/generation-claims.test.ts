/**
 * Generation claims of the RunStore port, on both stores (SQLite, and DynamoRunStore against
 * dynalite): a lease per task that lets one worker at a time call the model for it.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { DynamoRunStore, runTableKey } from '../../adapters/aws/dynamo-run-store';
import type { RunStore } from '../../core/store';
import { startDynalite, type LocalDynamo } from '../aws/local-servers';

/** A clock the tests move by hand. */
class Clock {
  ms = Date.parse('2025-01-01T00:00:00Z');
  readonly now = () => new Date(this.ms);
}

interface StoreCase {
  name: string;
  make(clock: Clock): Promise<RunStore>;
}

let dynamo: LocalDynamo;

beforeAll(async () => {
  dynamo = await startDynalite();
});

afterAll(async () => {
  await dynamo.close();
});

const CASES: StoreCase[] = [
  { name: 'SqliteRunStore', make: async (clock) => new SqliteRunStore(':memory:', { now: clock.now }) },
  { name: 'DynamoRunStore', make: async (clock) => new DynamoRunStore(dynamo.doc, { tableName: await dynamo.createTable(), now: clock.now }) },
];

describe.each(CASES)('$name generation claims', ({ make }) => {
  let clock: Clock;
  let store: RunStore;

  beforeEach(async () => {
    clock = new Clock();
    store = await make(clock);
  });

  afterEach(async () => {
    await store.close();
  });

  it('gives the claim to the first owner and refuses a second while the lease stands', async () => {
    expect(await store.claimGeneration('t1', 'a', 60_000)).toBe(true);
    expect(await store.claimGeneration('t1', 'b', 60_000)).toBe(false);
    clock.ms += 59_000;
    expect(await store.claimGeneration('t1', 'b', 60_000)).toBe(false);
  });

  it('keeps claims of different tasks apart', async () => {
    expect(await store.claimGeneration('t1', 'a', 60_000)).toBe(true);
    expect(await store.claimGeneration('t2', 'b', 60_000)).toBe(true);
  });

  it('lets the holder claim again, renewing its lease', async () => {
    expect(await store.claimGeneration('t1', 'a', 60_000)).toBe(true);
    clock.ms += 50_000;
    expect(await store.claimGeneration('t1', 'a', 60_000)).toBe(true);
    // Past the first lease, within the renewed one.
    clock.ms += 30_000;
    expect(await store.claimGeneration('t1', 'b', 60_000)).toBe(false);
  });

  it('lets another owner take a claim whose lease has run out (a crashed holder)', async () => {
    expect(await store.claimGeneration('t1', 'a', 60_000)).toBe(true);
    clock.ms += 60_001;
    expect(await store.claimGeneration('t1', 'b', 60_000)).toBe(true);
    // The claim is b's now: a, back from the dead, cannot take it.
    expect(await store.claimGeneration('t1', 'a', 60_000)).toBe(false);
  });

  it('ignores a release by an owner that does not hold the claim', async () => {
    expect(await store.claimGeneration('t1', 'a', 60_000)).toBe(true);
    await store.releaseGeneration('t1', 'b');
    expect(await store.claimGeneration('t1', 'b', 60_000)).toBe(false);
  });

  it('frees the task when the holder releases', async () => {
    expect(await store.claimGeneration('t1', 'a', 60_000)).toBe(true);
    await store.releaseGeneration('t1', 'a');
    expect(await store.claimGeneration('t1', 'b', 60_000)).toBe(true);
  });

  it('releases without error when there is no claim', async () => {
    await expect(store.releaseGeneration('t1', 'a')).resolves.toBeUndefined();
  });

  it('gives the claim to exactly one of 10 owners claiming at once', async () => {
    const owners = Array.from({ length: 10 }, (_, i) => `owner-${i}`);
    const won = await Promise.all(owners.map((o) => store.claimGeneration('t1', o, 60_000)));
    expect(won.filter(Boolean)).toHaveLength(1);
    // The winner holds it: every other owner is still refused.
    const winner = owners[won.indexOf(true)];
    for (const o of owners.filter((o) => o !== winner)) expect(await store.claimGeneration('t1', o, 60_000)).toBe(false);
  });

  it('gives an expired claim to exactly one of 10 owners claiming at once', async () => {
    expect(await store.claimGeneration('t1', 'crashed', 1_000)).toBe(true);
    clock.ms += 2_000;
    const won = await Promise.all(Array.from({ length: 10 }, (_, i) => store.claimGeneration('t1', `owner-${i}`, 60_000)));
    expect(won.filter(Boolean)).toHaveLength(1);
  });
});

describe('DynamoRunStore generation claim item', () => {
  it('is TASK#<taskId>/CLAIM with the lease end and a TTL a little after it, and goes on release', async () => {
    const clock = new Clock();
    const tableName = await dynamo.createTable();
    const store = new DynamoRunStore(dynamo.doc, { tableName, now: clock.now });

    await store.claimGeneration('t1', 'a', 90_000);
    const item = (await dynamo.doc.send(new GetCommand({ TableName: tableName, Key: runTableKey.generationClaim('t1'), ConsistentRead: true }))).Item;
    expect(runTableKey.generationClaim('t1')).toEqual({ pk: 'TASK#t1', sk: 'CLAIM' });
    expect(item).toMatchObject({ pk: 'TASK#t1', sk: 'CLAIM', taskId: 't1', owner: 'a', claimUntil: clock.ms + 90_000 });
    const leaseEndSec = (clock.ms + 90_000) / 1000;
    expect(item!.expiresAt).toBeGreaterThanOrEqual(leaseEndSec);
    expect(item!.expiresAt).toBeLessThanOrEqual(leaseEndSec + 2 * 3600);

    await store.releaseGeneration('t1', 'a');
    expect(
      (await dynamo.doc.send(new GetCommand({ TableName: tableName, Key: runTableKey.generationClaim('t1'), ConsistentRead: true }))).Item,
    ).toBeUndefined();
  });
});
