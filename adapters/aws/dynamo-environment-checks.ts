/**
 * The cloud's environment checks (core/cloud/ports.ts EnvironmentChecks) on the run table:
 *
 *   item          pk                sk                    other attributes
 *   image check   IMAGE#<image>     ENV#<paperDigest>     paper, record (JSON), checkedAt
 *   check claim   IMAGE#<image>     CLAIM#<paperDigest>   owner, claimUntil (epoch ms),
 *                                                         expiresAt (TTL, epoch s)
 *   paper env     RUN#<runId>       ENV#<paper>           record (JSON)
 *
 * An image check is written once (conditional put: the first shard's result stands) and kept:
 * an image's content does not change under its digest. A claim is taken as a generation
 * claim is (adapters/aws/dynamo-run-store.ts): a PutItem conditional on no claim, an
 * expired one, or the caller's own.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { PaperEnvironment } from '../../core/records';
import type { EnvironmentChecks, RunPaperEnvironment } from '../../core/cloud/ports';
import { KEY_PREFIXES, runTableKey, TABLE_ATTRIBUTES, VERDICT_ATTRIBUTES } from '../../core/cloud/storage-layout';

/** A claim item outlives its lease by this much before TTL may remove it. */
const CLAIM_TTL_SLACK_SEC = 3600;

const isConditionFailure = (err: unknown): boolean => (err as { name?: string } | null)?.name === 'ConditionalCheckFailedException';

export class DynamoEnvironmentChecks implements EnvironmentChecks {
  private readonly table: string;
  private readonly now: () => Date;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    options: { tableName: string; now?: () => Date },
  ) {
    this.table = options.tableName;
    this.now = options.now ?? (() => new Date());
  }

  async getImageCheck(image: string, paperDigest: string): Promise<PaperEnvironment | null> {
    const res = await this.doc.send(new GetCommand({ TableName: this.table, Key: runTableKey.imageCheck(image, paperDigest), ConsistentRead: true }));
    return res.Item ? (JSON.parse(res.Item.record as string) as PaperEnvironment) : null;
  }

  async putImageCheck(image: string, paperDigest: string, result: PaperEnvironment): Promise<void> {
    await this.conditional(
      new PutCommand({
        TableName: this.table,
        Item: { ...runTableKey.imageCheck(image, paperDigest), paper: result.paper, record: JSON.stringify(result), checkedAt: this.now().toISOString() },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': TABLE_ATTRIBUTES.partitionKey },
      }),
    );
  }

  async claimImageCheck(image: string, paperDigest: string, owner: string, leaseMs: number): Promise<boolean> {
    const now = this.now().getTime();
    const claimUntil = now + leaseMs;
    return this.conditional(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...runTableKey.imageCheckClaim(image, paperDigest),
          owner,
          claimUntil,
          [TABLE_ATTRIBUTES.ttlAttribute]: Math.ceil(claimUntil / 1000) + CLAIM_TTL_SLACK_SEC,
        },
        ConditionExpression: 'attribute_not_exists(#pk) OR #until < :now OR #owner = :owner',
        ExpressionAttributeNames: { '#pk': TABLE_ATTRIBUTES.partitionKey, '#until': 'claimUntil', '#owner': 'owner' },
        ExpressionAttributeValues: { ':now': now, ':owner': owner },
      }),
    );
  }

  async putRunPaperEnvironment(runId: string, result: RunPaperEnvironment): Promise<void> {
    // An UpdateItem of one attribute of its own: the shard task role may not put whole items
    // under a run's partition (VERDICT_ATTRIBUTES in core/cloud/storage-layout.ts).
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: runTableKey.runPaperEnvironment(runId, result.paper),
        UpdateExpression: 'SET #env = :env',
        ExpressionAttributeNames: { '#env': VERDICT_ATTRIBUTES.runEnvironment },
        ExpressionAttributeValues: { ':env': JSON.stringify(result) },
      }),
    );
  }

  async listRunPaperEnvironments(runId: string): Promise<RunPaperEnvironment[]> {
    const out: RunPaperEnvironment[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const res = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: { '#pk': TABLE_ATTRIBUTES.partitionKey, '#sk': TABLE_ATTRIBUTES.sortKey },
          ExpressionAttributeValues: { ':pk': runTableKey.run(runId).pk, ':prefix': KEY_PREFIXES.environment },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of res.Items ?? []) out.push(JSON.parse((item[VERDICT_ATTRIBUTES.runEnvironment] ?? item.record) as string) as RunPaperEnvironment);
      start = res.LastEvaluatedKey;
    } while (start);
    return out;
  }

  /** Sends a conditional put; false when its condition failed (any other error is thrown). */
  private async conditional(command: PutCommand): Promise<boolean> {
    try {
      await this.doc.send(command);
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }
}
