/**
 * The lane throttle's state on the run table (core/lane-throttle.ts LaneStateStore): one item
 * per provider lane (`LANE#<lane>` / `THROTTLE`, core/cloud/storage-layout.ts) holding the
 * shared AIMD limit, its epoch, the successes since it last changed and the slots held with
 * their leases, as JSON, and a version every write is conditional on (compare-and-set), so
 * generator instances that change the lane at once never overwrite each other. The item's
 * TTL (the table's `expiresAt`) is set a day past each write: a lane idle that long starts
 * again at its configured concurrency.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { LaneState, LaneStateStore, VersionedLaneState } from '../../core/lane-throttle';
import { runTableKey } from '../../core/cloud/storage-layout';
import { RUN_TABLE_KEYS } from './run-table-keys';

/** Attributes of a lane throttle item besides its keys. */
const ATTR = { state: 'state', version: 'version' } as const;

export interface DynamoLaneStateStoreOptions {
  tableName: string;
  /** Seconds past the last write after which the item expires (TTL). @default 86400 */
  ttlSeconds?: number;
  /** @default () => new Date() */
  now?: () => Date;
}

export class DynamoLaneStateStore implements LaneStateStore {
  private readonly now: () => Date;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: DynamoLaneStateStoreOptions,
  ) {
    this.now = options.now ?? (() => new Date());
  }

  async read(lane: string): Promise<VersionedLaneState | null> {
    // Consistent: a slot taken a moment ago on another instance must be counted.
    const res = await this.doc.send(new GetCommand({ TableName: this.options.tableName, Key: runTableKey.laneThrottle(lane), ConsistentRead: true }));
    const item = res.Item;
    if (!item) return null;
    return { state: JSON.parse(String(item[ATTR.state])) as LaneState, version: Number(item[ATTR.version]) };
  }

  async write(lane: string, state: LaneState, expected: number | null): Promise<boolean> {
    const expiresAt = Math.floor(this.now().getTime() / 1000) + (this.options.ttlSeconds ?? 86_400);
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: {
            ...runTableKey.laneThrottle(lane),
            [ATTR.state]: JSON.stringify(state),
            [ATTR.version]: (expected ?? 0) + 1,
            [RUN_TABLE_KEYS.ttlAttribute]: expiresAt,
          },
          ...(expected === null
            ? { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': RUN_TABLE_KEYS.partitionKey } }
            : { ConditionExpression: '#v = :v', ExpressionAttributeNames: { '#v': ATTR.version }, ExpressionAttributeValues: { ':v': expected } }),
        }),
      );
      return true;
    } catch (e) {
      if ((e as { name?: string } | null)?.name === 'ConditionalCheckFailedException') return false;
      throw e;
    }
  }
}
