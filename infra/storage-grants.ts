import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { ARTIFACT_PREFIXES, TABLE_ATTRIBUTES } from '../core/cloud/storage-layout';
import { OBJECT_TAGS } from '../core/cloud/object-tags';

/** DynamoDB item actions a grantee may receive (never table management or Scan). */
export type TableItemAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:Query'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:BatchWriteItem'
  | 'dynamodb:ConditionCheckItem'
  | 'dynamodb:DeleteItem';

export interface TableGrantOptions {
  /** Also allow the actions on the gsi1 index (only meaningful for Query). */
  readonly index?: boolean;
  /**
   * Restrict the items to partition keys matching these patterns (`dynamodb:LeadingKeys`,
   * StringLike), written with `leadingKeys(KEY_PREFIXES.x)` of core/cloud/storage-layout.ts.
   * @default - any partition key
   */
  readonly leadingKeys?: string[];
  /**
   * Restrict the attributes the request may name (`dynamodb:Attributes`, every one of them
   * in this list, key attributes included), e.g. for an UpdateItem of one counter.
   * @default - any attribute
   */
  readonly attributes?: string[];
  /**
   * The ReturnValues the request may ask for (`dynamodb:ReturnValues`), with `attributes`, so
   * that a write cannot return the item's other attributes (ALL_OLD, ALL_NEW).
   * @default - any
   */
  readonly returnValues?: Array<'NONE' | 'UPDATED_OLD' | 'UPDATED_NEW' | 'ALL_OLD' | 'ALL_NEW'>;
}

export interface ArtifactGrantOptions {
  /** Object key patterns the grantee may read (s3:GetObject), e.g. `ARTIFACT_PATTERNS.psets`. */
  readonly read?: string[];
  /**
   * Object key patterns the grantee may write (s3:PutObject), e.g. `ARTIFACT_PATTERNS.runs`;
   * under `runs/`, with the run's cost-allocation tag (s3:PutObjectTagging of OBJECT_TAGS keys only).
   */
  readonly write?: string[];
  /** Key prefixes the grantee may list (s3:ListBucket with an s3:prefix condition), e.g. `ARTIFACT_PATTERNS.psets`. */
  readonly list?: string[];
}

/** Grants exactly the listed item actions on the run table (and its index when asked). */
export function grantTableItems(table: dynamodb.ITable, grantee: iam.IGrantable, actions: TableItemAction[], options: TableGrantOptions = {}): iam.Grant {
  const resources = [table.tableArn];
  if (options.index) resources.push(`${table.tableArn}/index/${TABLE_ATTRIBUTES.gsi1Name}`);
  return iam.Grant.addToPrincipal({
    grantee,
    actions,
    resourceArns: resources,
    conditions:
      options.leadingKeys || options.attributes || options.returnValues
        ? {
            ...(options.leadingKeys ? { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': options.leadingKeys } } : {}),
            ...(options.attributes ? { 'ForAllValues:StringEquals': { 'dynamodb:Attributes': options.attributes } } : {}),
            ...(options.returnValues ? { StringEqualsIfExists: { 'dynamodb:ReturnValues': options.returnValues } } : {}),
          }
        : undefined,
  });
}

/** Grants object reads, writes and listings of the artifacts bucket under the given key patterns only. */
export function grantArtifacts(bucket: s3.IBucket, grantee: iam.IGrantable, options: ArtifactGrantOptions): void {
  const objectArns = (patterns: string[]) => patterns.map((p) => bucket.arnForObjects(p));
  if (options.read?.length) {
    iam.Grant.addToPrincipal({ grantee, actions: ['s3:GetObject'], resourceArns: objectArns(options.read) });
  }
  if (options.write?.length) {
    iam.Grant.addToPrincipal({ grantee, actions: ['s3:PutObject'], resourceArns: objectArns(options.write) });
    // The S3 adapter tags a run's objects in their PutObject (core/cloud/object-tags.ts): that
    // request needs s3:PutObjectTagging too, allowed here on the same keys, for the rcb tag keys only.
    const runKeys = options.write.filter((p) => p.startsWith(ARTIFACT_PREFIXES.runs));
    if (runKeys.length) {
      iam.Grant.addToPrincipal({
        grantee,
        actions: ['s3:PutObjectTagging'],
        resourceArns: objectArns(runKeys),
        conditions: {
          'ForAllValues:StringEquals': { 's3:RequestObjectTagKeys': Object.values(OBJECT_TAGS) },
          Null: { 's3:RequestObjectTagKeys': 'false' },
        },
      });
    }
  }
  if (options.list?.length) {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:ListBucket'],
      resourceArns: [bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': options.list } },
    });
  }
}

/** A key pattern as a regular expression matching it literally. */
const literally = (pattern: string): string => pattern.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * The cdk-nag finding (an acknowledgement's `appliesTo`) of object-key wildcards granted on
 * the artifacts bucket by `grantArtifacts`, for the given `ARTIFACT_PATTERNS`: one regex over
 * `Resource::<StorageArtifacts….Arn>/<pattern>`, the bucket being StorageConstruct's
 * `Artifacts` under the stack's `Storage`. Patterns that each end in `/*` share one group.
 */
export function artifactWildcardFinding(...patterns: string[]): { regex: string } {
  const wildcard = '/*';
  const keys =
    patterns.length > 1 && patterns.every((p) => p.endsWith(wildcard))
      ? `(${patterns.map((p) => literally(p.slice(0, -wildcard.length))).join('|')})${literally(wildcard)}`
      : patterns.map(literally).join('|');
  return { regex: `/^Resource::<StorageArtifacts[0-9A-F]+\\.Arn>\\/${keys}$/g` };
}
