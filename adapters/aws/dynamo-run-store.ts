/**
 * RunStore on one DynamoDB table (single-table design). Same semantics as the SQLite store
 * (adapters/local/sqlite-store.ts): every repeatable write is conditional, so a resumed
 * run or a duplicate SQS delivery changes nothing, and budget reservations are one
 * conditional UpdateItem on the run item.
 *
 *   item          pk               sk                 other attributes
 *   run           RUN#<runId>      META               record (JSON), status, error, updatedAt,
 *                                                     budgetUsd (absent = no budget), spentUsd,
 *                                                     reservedUsd, committedUsd, headroomUsd,
 *                                                     budgetRev, gsi1pk=RUNS,
 *                                                     gsi1sk=<createdAt>#<runId>
 *   task          RUN#<runId>      TASK#<taskId>      taskId, seq, paper, file, snippet, loc,
 *                                                     model, sample
 *   task counter  RUN#<runId>      TASKSEQ            nextSeq
 *   verdict       RUN#<runId>      VERDICT#<taskId>   verdict (JSON), verdictBlob (items of
 *                                                     before 2026-12: taskId, record, recordKey)
 *   completion    TASK#<taskId>    COMPLETION         taskId, model, createdAt, record (JSON)
 *   claim         TASK#<taskId>    CLAIM              taskId, owner, claimUntil (epoch ms),
 *                                                     expiresAt (TTL, epoch s)
 *
 * Generation claims: a lease on a task's model call while it is in flight, so that a
 * duplicate SQS delivery handled by another Lambda instance at the same time does not pay
 * for the answer again. Taking one is a PutItem conditional on
 * `attribute_not_exists(pk) OR claimUntil < :now OR owner = :owner`; releasing it is a
 * DeleteItem conditional on the owner. `claimUntil` decides (an expired claim may still be
 * read until TTL removes it); `expiresAt`, a little after the lease, only cleans up the
 * claims of holders that never released.
 *
 * Budget: a DynamoDB condition cannot add two attributes, so the run item keeps two derived
 * amounts, updated in the same UpdateItem as spentUsd and reservedUsd:
 *   committedUsd = spentUsd + reservedUsd
 *   headroomUsd  = (budgetUsd ?? 0) - committedUsd
 * and a reservation is `headroomUsd >= usd` (within EPSILON), exactly the SQLite rule
 * `spent + reserved + usd <= budget`. DynamoDB numbers are decimals, so the sums are exact
 * for the amounts JavaScript sends.
 */
import type { DynamoDBDocumentClient, NativeAttributeValue } from '@aws-sdk/lib-dynamodb';
import { BatchGetCommand, DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createHash } from 'node:crypto';
import type { BlobStore, CompletionCache, RunStore } from '../../core/store';
import type { CompletionRecord, RunEnvironment, RunRecord, RunStatus, TaskRecord, Verdict } from '../../core/records';
import { cloudKeys } from '../../core/cloud/payloads';
import type { RunCounters, RunCountValues } from '../../core/cloud/ports';
import { mapLimit } from './map-limit';

import { RUN_TABLE_KEYS } from './run-table-keys';
import { COUNTER_ATTRIBUTES, KEY_PREFIXES, RUNS_INDEX_PARTITION, runTableKey, VERDICT_ATTRIBUTES } from '../../core/cloud/storage-layout';

export { RUN_TABLE_KEYS };

/** Item keys and the runs index partition: core/cloud/storage-layout.ts. */
export { RUNS_INDEX_PARTITION, runTableKey };

type Key = { pk: string; sk: string };

/** Attributes of the run item's progress counters. */

/** Tolerance for float sums of dollar amounts when comparing with the budget (as in SQLite). */
const EPSILON = 1e-9;
/** DynamoDB's item size limit. Records are checked before writing so the error names the task. */
const MAX_ITEM_BYTES = 400 * 1024;
/** BatchGetItem takes at most 100 keys. */
const BATCH_GET_MAX = 100;
/** How long after its lease a generation claim item is left for TTL to delete, seconds. */
const CLAIM_TTL_SLACK_SEC = 3600;

export interface DynamoRunStoreOptions {
  tableName: string;
  /**
   * Conditional task writes in flight at once in putTasks.
   * @default 16
   */
  writeConcurrency?: number;
  /**
   * Attempts at reading the keys BatchGetItem left unprocessed (throttling) before giving up.
   * @default 8
   */
  batchGetAttempts?: number;
  /**
   * Days after which run-scoped items (run, tasks, verdicts) expire through the table's TTL
   * attribute. Completions never expire: they are the cross-run cache of paid answers.
   * @default no expiry
   */
  runTtlDays?: number;
  /** @default () => new Date() */
  now?: () => Date;
  /** @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Where a verdict too large for one item (its logs: up to 2 x 64 KiB, and JSON escapes a
   * control character in six bytes) keeps its full record; the item then holds the verdict
   * without its log texts and the record's key (`recordKey`). Without it, such a verdict is
   * refused with ItemTooLargeError.
   * @default none
   */
  blobs?: BlobStore;
}

/**
 * A serialized verdict past this goes to the blob store: well under DynamoDB's 400 KB, so the
 * item's own attributes (keys, TTL, the pointer) always fit beside the trimmed record.
 */
export const VERDICT_INLINE_MAX_BYTES = 256 * 1024;

/** A record too large for one DynamoDB item (400 KB); the message names the item. */
export class ItemTooLargeError extends Error {
  constructor(what: string, bytes: number) {
    super(`${what} is ${bytes} bytes serialized, over DynamoDB's item limit of ${MAX_ITEM_BYTES} bytes`);
    this.name = 'ItemTooLargeError';
  }
}

/** Reads DynamoDB left unprocessed after every attempt (sustained throttling). */
export class UnprocessedKeysError extends Error {
  constructor(
    readonly table: string,
    readonly unprocessed: number,
    attempts: number,
  ) {
    super(`BatchGetItem on ${table} left ${unprocessed} keys unprocessed after ${attempts} attempts`);
    this.name = 'UnprocessedKeysError';
  }
}

interface RunItem {
  record: string;
  status: RunStatus;
  budgetUsd?: number;
  spentUsd: number;
  reservedUsd: number;
  committedUsd: number;
  headroomUsd: number;
  budgetRev: number;
  updatedAt: string;
  error?: string;
  /** The run's latest environment check, JSON (RunRecord.environment). */
  environment?: string;
}

function isConditionFailure(err: unknown): boolean {
  return (err as { name?: string } | null)?.name === 'ConditionalCheckFailedException';
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Attribute names of the budget amounts on the run item, as the update expressions refer to them. */
const BUDGET_NAMES = {
  '#reserved': 'reservedUsd',
  '#spent': 'spentUsd',
  '#committed': 'committedUsd',
  '#headroom': 'headroomUsd',
  '#rev': 'budgetRev',
} as const;

export class DynamoRunStore implements RunStore, RunCounters {
  private readonly table: string;
  private readonly writeConcurrency: number;
  private readonly batchGetAttempts: number;
  private readonly now: () => Date;
  private readonly blobs?: BlobStore;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly runTtlDays?: number;

  /** The caller owns `doc` (a handler reuses it across invocations); close() leaves it open. */
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    options: DynamoRunStoreOptions,
  ) {
    this.table = options.tableName;
    this.writeConcurrency = options.writeConcurrency ?? 16;
    this.batchGetAttempts = options.batchGetAttempts ?? 8;
    this.now = options.now ?? (() => new Date());
    this.blobs = options.blobs;
    this.sleep = options.sleep ?? defaultSleep;
    this.runTtlDays = options.runTtlDays;
  }

  // ---- runs ----

  async createRun(run: RunRecord): Promise<RunRecord> {
    const budget = run.spec.budgetUsd;
    const committed = run.spentUsd + run.reservedUsd;
    const item: Record<string, NativeAttributeValue> = {
      ...runTableKey.run(run.runId),
      [RUN_TABLE_KEYS.gsi1PartitionKey]: RUNS_INDEX_PARTITION,
      [RUN_TABLE_KEYS.gsi1SortKey]: `${run.createdAt}#${run.runId}`,
      runId: run.runId,
      record: JSON.stringify(run),
      status: run.status,
      ...(budget === null ? {} : { budgetUsd: budget }),
      spentUsd: run.spentUsd,
      reservedUsd: run.reservedUsd,
      committedUsd: committed,
      headroomUsd: (budget ?? 0) - committed,
      budgetRev: 0,
      updatedAt: run.updatedAt,
      ...(run.error ? { error: run.error } : {}),
      ...this.expiry(),
    };
    this.checkSize(item, `run ${run.runId}`);
    await this.putIfAbsent(item);
    const stored = await this.getRun(run.runId);
    if (!stored) throw new Error(`run ${run.runId} was written to ${this.table} but cannot be read back`);
    return stored;
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    const res = await this.doc.send(new GetCommand({ TableName: this.table, Key: runTableKey.run(runId), ConsistentRead: true }));
    return res.Item ? toRunRecord(res.Item as RunItem, runId) : null;
  }

  /**
   * Runs newest first, from the gsi1 index. Index reads are eventually consistent: a run
   * created a moment ago may be missing.
   */
  async listRuns(limit?: number): Promise<RunRecord[]> {
    const out: RunRecord[] = [];
    let start: Record<string, NativeAttributeValue> | undefined;
    do {
      const res = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: RUN_TABLE_KEYS.gsi1Name,
          KeyConditionExpression: '#gpk = :runs',
          ExpressionAttributeNames: { '#gpk': RUN_TABLE_KEYS.gsi1PartitionKey },
          ExpressionAttributeValues: { ':runs': RUNS_INDEX_PARTITION },
          ScanIndexForward: false,
          ...(limit ? { Limit: limit - out.length } : {}),
          ExclusiveStartKey: start,
        }),
      );
      for (const item of res.Items ?? []) out.push(toRunRecord(item as RunItem, String(item.runId)));
      start = res.LastEvaluatedKey;
    } while (start && (!limit || out.length < limit));
    return out;
  }

  async setRunStatus(runId: string, status: RunStatus, error?: string): Promise<void> {
    await this.updateRun(runId, {
      UpdateExpression: `SET #status = :status, #updatedAt = :now ${error ? ', #error = :error' : 'REMOVE #error'}`,
      ExpressionAttributeNames: { '#status': 'status', '#updatedAt': 'updatedAt', '#error': 'error' },
      ExpressionAttributeValues: { ':status': status, ':now': this.now().toISOString(), ...(error ? { ':error': error } : {}) },
    });
  }

  // ---- progress counters (core/cloud/ports.ts RunCounters) ----

  async setTotal(runId: string, total: number): Promise<void> {
    await this.updateRun(runId, {
      UpdateExpression: 'SET #total = :total',
      ExpressionAttributeNames: { '#total': COUNTER_ATTRIBUTES.total },
      ExpressionAttributeValues: { ':total': total },
    });
  }

  async addCounts(runId: string, delta: Partial<Omit<RunCountValues, 'total'>>): Promise<void> {
    const entries = Object.entries(delta).filter(([, n]) => n) as Array<[keyof typeof COUNTER_ATTRIBUTES, number]>;
    if (!entries.length) return;
    await this.updateRun(runId, {
      UpdateExpression: `ADD ${entries.map(([k]) => `#${k} :${k}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(entries.map(([k]) => [`#${k}`, COUNTER_ATTRIBUTES[k]])),
      ExpressionAttributeValues: Object.fromEntries(entries.map(([k, n]) => [`:${k}`, n])),
    });
  }

  async getCounts(runId: string): Promise<RunCountValues | null> {
    const res = await this.doc.send(new GetCommand({ TableName: this.table, Key: runTableKey.run(runId), ConsistentRead: true }));
    const item = res.Item;
    if (!item || typeof item[COUNTER_ATTRIBUTES.total] !== 'number') return null;
    const n = (k: keyof typeof COUNTER_ATTRIBUTES): number => (typeof item[COUNTER_ATTRIBUTES[k]] === 'number' ? (item[COUNTER_ATTRIBUTES[k]] as number) : 0);
    return { total: n('total'), settled: n('settled'), failed: n('failed'), judged: n('judged') };
  }

  async setRunBudget(runId: string, budgetUsd: number | null): Promise<void> {
    // `:b - committedUsd` recomputes the headroom from the amounts as they are at this write.
    await this.updateRun(runId, {
      UpdateExpression:
        budgetUsd === null ? 'SET #headroom = :zero - #committed REMOVE #budget ADD #rev :one' : 'SET #budget = :b, #headroom = :b - #committed ADD #rev :one',
      ExpressionAttributeNames: { '#budget': 'budgetUsd', '#headroom': 'headroomUsd', '#committed': 'committedUsd', '#rev': 'budgetRev' },
      ExpressionAttributeValues: { ...(budgetUsd === null ? { ':zero': 0 } : { ':b': budgetUsd }), ':one': 1 },
    });
  }

  async setRunEnvironment(runId: string, environment: RunEnvironment | null): Promise<void> {
    await this.updateRun(runId, {
      UpdateExpression: environment === null ? 'REMOVE #environment' : 'SET #environment = :environment',
      ExpressionAttributeNames: { '#environment': 'environment' },
      ...(environment === null ? {} : { ExpressionAttributeValues: { ':environment': JSON.stringify(environment) } }),
    });
  }

  // ---- tasks ----

  /**
   * Inserts the tasks that are not there yet, in the order given, after those of earlier
   * calls. Existing tasks are never rewritten: each write is a PutItem conditional on the
   * item's absence (BatchWriteItem cannot be conditional), so even two planners racing on
   * the same run leave each task as its first writer put it.
   */
  async putTasks(runId: string, tasks: TaskRecord[]): Promise<void> {
    const unique = new Map<string, TaskRecord>();
    for (const t of tasks) if (!unique.has(t.taskId)) unique.set(t.taskId, t);
    if (unique.size === 0) return;

    // Skip what is stored already (a resumed plan) so the counter and the writes are spent
    // only on new tasks.
    const stored = await this.batchGet(
      [...unique.keys()].map((id) => runTableKey.task(runId, id)),
      true,
    );
    const existing = new Set(stored.map((item) => item[RUN_TABLE_KEYS.sortKey] as string));
    const fresh = [...unique.values()].filter((t) => !existing.has(runTableKey.task(runId, t.taskId).sk));
    if (fresh.length === 0) return;

    // Sequence numbers from a counter item, so that order survives concurrent planners and
    // clock skew between functions.
    const expiry = this.expiry();
    const counter = await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: runTableKey.taskCounter(runId),
        UpdateExpression: expiry.expiresAt === undefined ? 'ADD #next :n' : 'ADD #next :n SET #exp = :exp',
        ExpressionAttributeNames: { '#next': 'nextSeq', ...(expiry.expiresAt === undefined ? {} : { '#exp': RUN_TABLE_KEYS.ttlAttribute }) },
        ExpressionAttributeValues: { ':n': fresh.length, ...(expiry.expiresAt === undefined ? {} : { ':exp': expiry.expiresAt }) },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    const first = Number(counter.Attributes?.nextSeq) - fresh.length;
    await mapLimit(fresh, this.writeConcurrency, async (t, i) => {
      await this.putIfAbsent({
        ...runTableKey.task(runId, t.taskId),
        taskId: t.taskId,
        seq: first + i,
        paper: t.paper,
        file: t.file,
        snippet: t.snippet,
        loc: t.loc,
        model: t.model,
        sample: t.sample,
        ...expiry,
      });
    });
  }

  async listTasks(runId: string): Promise<TaskRecord[]> {
    const items = await this.queryRun(runId, KEY_PREFIXES.task);
    items.sort((a, b) => Number(a.seq) - Number(b.seq));
    return items.map(toTaskRecord);
  }

  /**
   * One task of a run, by id: what the generator needs for one SQS message without reading
   * the whole run (not part of the RunStore port).
   */
  async getTask(runId: string, taskId: string): Promise<TaskRecord | null> {
    const res = await this.doc.send(new GetCommand({ TableName: this.table, Key: runTableKey.task(runId, taskId), ConsistentRead: true }));
    return res.Item ? toTaskRecord(res.Item) : null;
  }

  // ---- completions ----

  async putCompletion(c: CompletionRecord): Promise<boolean> {
    const item = { ...runTableKey.completion(c.taskId), taskId: c.taskId, model: c.model, createdAt: c.createdAt, record: JSON.stringify(c) };
    this.checkSize(item, `completion of task ${c.taskId}`);
    return this.putIfAbsent(item);
  }

  async getCompletions(taskIds: string[]): Promise<Map<string, CompletionRecord>> {
    const items = await this.batchGet([...new Set(taskIds)].map(runTableKey.completion));
    const byId = new Map<string, CompletionRecord>();
    for (const item of items) {
      const c = parseRecord<CompletionRecord>(item, 'completion');
      byId.set(c.taskId, c);
    }
    // In the order asked, as the SQLite store returns them.
    const out = new Map<string, CompletionRecord>();
    for (const id of taskIds) {
      const c = byId.get(id);
      if (c) out.set(id, c);
    }
    return out;
  }

  /**
   * Drops the task's answer if it is an error, and the run's verdict on it (the RunStore
   * contract; the SQLite store does both in one transaction). The verdict goes first: a crash
   * between the two deletes leaves the error answer without a verdict, which the next resume
   * reopens again or evaluation judges again; the other order could leave a stale verdict
   * that the new answer's first-write-wins verdict could never replace. The answer is deleted
   * only while it is still the error read (a condition on its record), never an answer that
   * replaced it meanwhile.
   */
  async reopenTask(runId: string, taskId: string): Promise<boolean> {
    const res = await this.doc.send(new GetCommand({ TableName: this.table, Key: runTableKey.completion(taskId), ConsistentRead: true }));
    if (!res.Item || !parseRecord<CompletionRecord>(res.Item, 'completion').error) return false;
    await this.doc.send(new DeleteCommand({ TableName: this.table, Key: runTableKey.verdict(runId, taskId) }));
    return this.sendConditional(
      new DeleteCommand({
        TableName: this.table,
        Key: runTableKey.completion(taskId),
        ConditionExpression: '#record = :record',
        ExpressionAttributeNames: { '#record': 'record' },
        ExpressionAttributeValues: { ':record': res.Item.record },
      }),
    );
  }

  // ---- verdicts ----

  async putVerdict(runId: string, v: Verdict): Promise<boolean> {
    let record = JSON.stringify(v);
    let recordKey: string | undefined;
    if (this.blobs && Buffer.byteLength(record, 'utf8') > VERDICT_INLINE_MAX_BYTES) {
      // The full record first, under a key of its own content: a losing writer's object can
      // never replace the one the winning item points to.
      const digest = createHash('sha256').update(record).digest('hex').slice(0, 16);
      recordKey = cloudKeys.verdictRecord(runId, v.taskId, digest);
      await this.blobs.put(recordKey, record, 'application/json');
      record = JSON.stringify({ ...v, stdout: { ...v.stdout, text: '' }, stderr: { ...v.stderr, text: '' } });
    }
    const attributes = { [VERDICT_ATTRIBUTES.record]: record, ...(recordKey ? { [VERDICT_ATTRIBUTES.blobKey]: recordKey } : {}), ...this.expiry() };
    this.checkSize({ ...runTableKey.verdict(runId, v.taskId), ...attributes }, `verdict of task ${v.taskId} in run ${runId}`);
    return this.createWith(runTableKey.verdict(runId, v.taskId), attributes);
  }

  /** The run's verdicts, in task id order; those kept in the blob store are read back whole. */
  async listVerdicts(runId: string): Promise<Verdict[]> {
    return this.verdictsOf(await this.queryRun(runId, KEY_PREFIXES.verdict));
  }

  /** BatchGetItem of the tasks' verdict items (100 keys a request), not a Query of the run's. */
  async getVerdicts(runId: string, taskIds: string[]): Promise<Map<string, Verdict>> {
    const verdicts = await this.verdictsOf(await this.batchGet([...new Set(taskIds)].map((id) => runTableKey.verdict(runId, id))));
    const byId = new Map(verdicts.map((v) => [v.taskId, v]));
    // In the order asked, as the SQLite store returns them.
    return new Map(taskIds.flatMap((id) => (byId.has(id) ? [[id, byId.get(id)!] as const] : [])));
  }

  /** Verdicts of their items; those kept in the blob store are read back whole. */
  private verdictsOf(items: Record<string, NativeAttributeValue>[]): Promise<Verdict[]> {
    return mapLimit(items, 8, async (item) => {
      // Items written before the shard's UpdateItem (see putVerdict) hold record and recordKey.
      const blobKey = item[VERDICT_ATTRIBUTES.blobKey] ?? item.recordKey;
      if (typeof blobKey !== 'string') return parseRecord<Verdict>({ ...item, record: item[VERDICT_ATTRIBUTES.record] ?? item.record }, 'verdict');
      const body = await this.blobs?.get(blobKey);
      if (!body)
        throw new Error(`verdict item ${item.pk}/${item.sk} points to ${blobKey}, which the blob store ${this.blobs ? 'does not hold' : 'was not given'}`);
      return JSON.parse(body.toString('utf8')) as Verdict;
    });
  }

  // ---- budget ----

  async reserveBudget(runId: string, usd: number): Promise<boolean> {
    return this.sendConditional(
      new UpdateCommand({
        TableName: this.table,
        Key: runTableKey.run(runId),
        UpdateExpression: 'SET #reserved = #reserved + :usd, #committed = #committed + :usd, #headroom = #headroom - :usd ADD #rev :one',
        ConditionExpression: 'attribute_exists(#pk) AND (attribute_not_exists(#budget) OR #headroom >= :need)',
        ExpressionAttributeNames: {
          '#pk': RUN_TABLE_KEYS.partitionKey,
          '#budget': 'budgetUsd',
          '#reserved': 'reservedUsd',
          '#committed': 'committedUsd',
          '#headroom': 'headroomUsd',
          '#rev': 'budgetRev',
        },
        ExpressionAttributeValues: { ':usd': usd, ':need': usd - EPSILON, ':one': 1 },
      }),
    );
  }

  async settleBudget(runId: string, reservedUsd: number, actualUsd: number): Promise<void> {
    // The usual case: the reservation is still there, one update.
    const delta = actualUsd - reservedUsd;
    const settled = await this.sendConditional(
      new UpdateCommand({
        TableName: this.table,
        Key: runTableKey.run(runId),
        UpdateExpression:
          'SET #reserved = #reserved - :r, #spent = #spent + :actual, #committed = #committed + :delta, #headroom = #headroom - :delta ADD #rev :one',
        ConditionExpression: 'attribute_exists(#pk) AND #reserved >= :r',
        ExpressionAttributeNames: { '#pk': RUN_TABLE_KEYS.partitionKey, ...BUDGET_NAMES },
        ExpressionAttributeValues: { ':r': reservedUsd, ':actual': actualUsd, ':delta': delta, ':one': 1 },
      }),
    );
    if (settled) return;
    // Less reserved than released (reservations were cleared): reserved goes to 0, never
    // below, as in SQLite. An update cannot take a maximum, so read and write back
    // conditionally on the budget revision, retrying while other updates interleave.
    for (let attempt = 1; ; attempt++) {
      const res = await this.doc.send(new GetCommand({ TableName: this.table, Key: runTableKey.run(runId), ConsistentRead: true }));
      if (!res.Item) return;
      const item = res.Item as RunItem;
      const reserved = Math.max(0, item.reservedUsd - reservedUsd);
      const spent = item.spentUsd + actualUsd;
      const command = new UpdateCommand({
        TableName: this.table,
        Key: runTableKey.run(runId),
        UpdateExpression: 'SET #reserved = :reserved, #spent = :spent, #committed = :committed, #headroom = :headroom ADD #rev :one',
        ConditionExpression: '#rev = :rev',
        ExpressionAttributeNames: BUDGET_NAMES,
        ExpressionAttributeValues: {
          ':reserved': reserved,
          ':spent': spent,
          ':committed': spent + reserved,
          ':headroom': (item.budgetUsd ?? 0) - spent - reserved,
          ':rev': item.budgetRev,
          ':one': 1,
        },
      });
      if (await this.sendConditional(command)) return;
      if (attempt >= 20) throw new Error(`settling budget on run ${runId}: the run item changed under each of ${attempt} attempts`);
      await this.sleep(Math.random() * 10 * attempt);
    }
  }

  async clearReservations(runId: string): Promise<void> {
    // Right-hand sides read the item before the update: headroom gains what was reserved.
    await this.updateRun(runId, {
      UpdateExpression: 'SET #reserved = :zero, #committed = #spent, #headroom = #headroom + #reserved ADD #rev :one',
      ExpressionAttributeNames: BUDGET_NAMES,
      ExpressionAttributeValues: { ':zero': 0, ':one': 1 },
    });
  }

  // ---- generation claims ----

  async claimGeneration(taskId: string, owner: string, leaseMs: number): Promise<boolean> {
    const now = this.now().getTime();
    const claimUntil = now + leaseMs;
    return this.sendConditional(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...runTableKey.generationClaim(taskId),
          taskId,
          owner,
          claimUntil,
          [RUN_TABLE_KEYS.ttlAttribute]: Math.ceil(claimUntil / 1000) + CLAIM_TTL_SLACK_SEC,
        },
        ConditionExpression: 'attribute_not_exists(#pk) OR #until < :now OR #owner = :owner',
        ExpressionAttributeNames: { '#pk': RUN_TABLE_KEYS.partitionKey, '#until': 'claimUntil', '#owner': 'owner' },
        ExpressionAttributeValues: { ':now': now, ':owner': owner },
      }),
    );
  }

  async releaseGeneration(taskId: string, owner: string): Promise<void> {
    await this.sendConditional(
      new DeleteCommand({
        TableName: this.table,
        Key: runTableKey.generationClaim(taskId),
        ConditionExpression: '#owner = :owner',
        ExpressionAttributeNames: { '#owner': 'owner' },
        ExpressionAttributeValues: { ':owner': owner },
      }),
    );
  }

  async close(): Promise<void> {
    // The document client belongs to the caller.
  }

  // ---- helpers ----

  /** Sends a conditional write; false when its condition failed (any other error is thrown). */
  private async sendConditional(command: PutCommand | UpdateCommand | DeleteCommand): Promise<boolean> {
    try {
      await this.doc.send(command as PutCommand);
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /**
   * Creates the item `key` with `attributes` unless it exists (false when it did), as an
   * UpdateItem: the shard task role may name only its own attributes under a run's partition
   * (dynamodb:Attributes), which a PutItem, replacing the whole item, could not be held to.
   */
  private async createWith(key: { pk: string; sk: string }, attributes: Record<string, NativeAttributeValue>): Promise<boolean> {
    const names = Object.keys(attributes);
    return this.sendConditional(
      new UpdateCommand({
        TableName: this.table,
        Key: key,
        UpdateExpression: `SET ${names.map((_, i) => `#a${i} = :a${i}`).join(', ')}`,
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': RUN_TABLE_KEYS.partitionKey, ...Object.fromEntries(names.map((n, i) => [`#a${i}`, n])) },
        ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:a${i}`, attributes[n]])),
      }),
    );
  }

  /** PutItem unless an item with the key exists; false when it did. */
  private async putIfAbsent(item: Record<string, NativeAttributeValue>): Promise<boolean> {
    return this.sendConditional(
      new PutCommand({
        TableName: this.table,
        Item: item,
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': RUN_TABLE_KEYS.partitionKey },
      }),
    );
  }

  /** UpdateItem on an existing run item; a missing run is left missing (as SQLite's UPDATE does). */
  private async updateRun(
    runId: string,
    expr: { UpdateExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues?: Record<string, NativeAttributeValue> },
  ): Promise<void> {
    await this.sendConditional(
      new UpdateCommand({
        TableName: this.table,
        Key: runTableKey.run(runId),
        UpdateExpression: expr.UpdateExpression,
        ConditionExpression: 'attribute_exists(#pk)',
        ExpressionAttributeNames: { ...expr.ExpressionAttributeNames, '#pk': RUN_TABLE_KEYS.partitionKey },
        ExpressionAttributeValues: expr.ExpressionAttributeValues,
      }),
    );
  }

  /** Every item of the run whose sort key starts with `prefix`, all pages, strongly consistent. */
  private async queryRun(runId: string, prefix: string): Promise<Record<string, NativeAttributeValue>[]> {
    const out: Record<string, NativeAttributeValue>[] = [];
    let start: Record<string, NativeAttributeValue> | undefined;
    do {
      const res = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: { '#pk': RUN_TABLE_KEYS.partitionKey, '#sk': RUN_TABLE_KEYS.sortKey },
          ExpressionAttributeValues: { ':pk': runTableKey.run(runId).pk, ':prefix': prefix },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      out.push(...(res.Items ?? []));
      start = res.LastEvaluatedKey;
    } while (start);
    return out;
  }

  /**
   * Strongly consistent BatchGetItem of `keys` in chunks of 100, retrying the keys DynamoDB
   * leaves unprocessed (throttling) with backoff. Returns the items found, in no order.
   */
  private async batchGet(keys: Key[], keysOnly = false): Promise<Record<string, NativeAttributeValue>[]> {
    const found: Record<string, NativeAttributeValue>[] = [];
    for (let i = 0; i < keys.length; i += BATCH_GET_MAX) {
      let pending: Record<string, NativeAttributeValue>[] = keys.slice(i, i + BATCH_GET_MAX);
      for (let attempt = 1; pending.length > 0; attempt++) {
        if (attempt > this.batchGetAttempts) throw new UnprocessedKeysError(this.table, pending.length, this.batchGetAttempts);
        if (attempt > 1) await this.sleep(Math.min(1000, 25 * 2 ** (attempt - 2)) * (0.5 + Math.random() / 2));
        const res = await this.doc.send(
          new BatchGetCommand({
            RequestItems: {
              [this.table]: {
                Keys: pending,
                ConsistentRead: true,
                ...(keysOnly
                  ? { ProjectionExpression: '#pk, #sk', ExpressionAttributeNames: { '#pk': RUN_TABLE_KEYS.partitionKey, '#sk': RUN_TABLE_KEYS.sortKey } }
                  : {}),
              },
            },
          }),
        );
        found.push(...(res.Responses?.[this.table] ?? []));
        pending = res.UnprocessedKeys?.[this.table]?.Keys ?? [];
      }
    }
    return found;
  }

  private expiry(): { expiresAt?: number } {
    if (!this.runTtlDays) return {};
    return { expiresAt: Math.floor(this.now().getTime() / 1000) + Math.round(this.runTtlDays * 86400) };
  }

  private checkSize(item: Record<string, NativeAttributeValue>, what: string): void {
    // JSON slightly overstates DynamoDB's size (quotes, braces): a safe bound.
    const bytes = Buffer.byteLength(JSON.stringify(item), 'utf8');
    if (bytes > MAX_ITEM_BYTES) throw new ItemTooLargeError(what, bytes);
  }
}

function toRunRecord(item: RunItem, runId: string): RunRecord {
  const run = parseRecord<RunRecord>(item as unknown as Record<string, NativeAttributeValue>, `run ${runId}`);
  run.status = item.status;
  run.spec.budgetUsd = item.budgetUsd ?? null;
  run.spentUsd = item.spentUsd;
  run.reservedUsd = item.reservedUsd;
  run.updatedAt = item.updatedAt;
  if (item.error) run.error = item.error;
  else delete run.error;
  if (item.environment) run.environment = JSON.parse(item.environment);
  return run;
}

function toTaskRecord(r: Record<string, NativeAttributeValue>): TaskRecord {
  return {
    taskId: String(r.taskId),
    paper: String(r.paper),
    file: String(r.file),
    snippet: String(r.snippet),
    loc: Number(r.loc),
    model: String(r.model),
    sample: Number(r.sample),
  };
}

function parseRecord<T>(item: Record<string, NativeAttributeValue>, what: string): T {
  if (typeof item.record !== 'string') throw new Error(`${what} item ${item.pk}/${item.sk} has no record attribute`);
  try {
    return JSON.parse(item.record) as T;
  } catch (err) {
    throw new Error(`${what} item ${item.pk}/${item.sk} holds a record that is not JSON: ${(err as Error).message}`);
  }
}

/**
 * The cross-run completion cache on the same table: the completion items of
 * {@link DynamoRunStore}, so a run store and a cache on one table share their answers.
 */
export class DynamoCompletionCache implements CompletionCache {
  private readonly store: DynamoRunStore;

  constructor(doc: DynamoDBDocumentClient, options: DynamoRunStoreOptions) {
    this.store = new DynamoRunStore(doc, options);
  }

  async get(taskId: string): Promise<CompletionRecord | null> {
    return (await this.store.getCompletions([taskId])).get(taskId) ?? null;
  }

  async put(c: CompletionRecord): Promise<void> {
    await this.store.putCompletion(c);
  }
}
