import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { ARTIFACT_PREFIXES, TABLE_ATTRIBUTES as TABLE_KEYS } from '../core/cloud/storage-layout';

export interface StorageConstructProps {
  /**
   * Days after which objects under `runs/` expire; 0 keeps them forever.
   * @default 180
   */
  readonly artifactRetentionDays?: number;
  /**
   * Days after which a replaced or deleted object version is removed.
   * @default 30
   */
  readonly noncurrentVersionRetentionDays?: number;
  /**
   * Keep the bucket and table (and protect the table from deletion) when the stack is
   * deleted. `false` suits throw-away stacks; the bucket must then be emptied before
   * `cdk destroy`.
   * @default true
   */
  readonly retainData?: boolean;
}

/**
 * The run store and the blob store of the cloud pipeline: one S3 bucket for artifacts and
 * one DynamoDB table holding every record of the RunStore port.
 */
export class StorageConstruct extends Construct {
  public readonly bucket: s3.Bucket;
  public readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: StorageConstructProps = {}) {
    super(scope, id);
    const retain = props.retainData ?? true;
    const removalPolicy = retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const artifactDays = props.artifactRetentionDays ?? 180;
    const noncurrentDays = props.noncurrentVersionRetentionDays ?? 30;

    this.bucket = new s3.Bucket(this, 'Artifacts', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      versioned: true,
      removalPolicy,
      lifecycleRules: [
        ...(artifactDays > 0 ? [{ id: 'run-artifacts', prefix: ARTIFACT_PREFIXES.runs, expiration: Duration.days(artifactDays) }] : []),
        {
          id: 'housekeeping',
          abortIncompleteMultipartUploadAfter: Duration.days(1),
          noncurrentVersionExpiration: Duration.days(noncurrentDays),
          expiredObjectDeleteMarker: true,
        },
      ],
    });
    NagSuppressions.addResourceSuppressions(this.bucket, [
      {
        id: 'AwsSolutions-S1',
        reason:
          "Artifacts are benchmark inputs and outputs written only by this stack's roles; server access logs would double the request count of every test log written. CloudTrail data events can be enabled by the account owner if required.",
      },
    ]);

    /*
     * Single-table layout of the RunStore port (adapters/aws/dynamo-run-store.ts writes it;
     * all keys are strings, `expiresAt` is epoch seconds for the TTL):
     *
     *   item          pk               sk                 gsi1pk   gsi1sk
     *   run           RUN#<runId>      META               RUNS     <createdAt>#<runId>
     *   task          RUN#<runId>      TASK#<taskId>      -        -
     *   task counter  RUN#<runId>      TASKSEQ            -        -
     *   verdict       RUN#<runId>      VERDICT#<taskId>   -        -
     *   completion    TASK#<taskId>    COMPLETION         -        -
     *   claim         TASK#<taskId>    CLAIM              -        -
     *
     * - The run item holds the spec, status and the budget amounts; a reservation is one
     *   conditional UpdateItem on it.
     * - listTasks / listVerdicts: Query pk = RUN#<runId> with begins_with(sk, 'TASK#' | 'VERDICT#').
     * - Runs newest first: Query gsi1 on gsi1pk = RUNS (a sparse index: only run items carry
     *   gsi1pk; further item kinds may overload it with their own gsi1pk values).
     * - Completions are keyed by task id alone, so they are the cross-run cache of paid
     *   answers and never expire; run-scoped items may carry expiresAt.
     * - Every repeatable write is a PutItem with attribute_not_exists(pk): first write wins.
     * - A claim is the generator's lease on a task's model call in flight (a duplicate SQS
     *   delivery handled at the same time does not call again): a PutItem conditional on
     *   no claim, an expired one or the same owner, deleted by its owner when the completion
     *   is stored; its expiresAt (a little after the lease) removes abandoned ones.
     * - Everything a run owns lives under RUN#<runId>, which lets IAM confine writers with
     *   dynamodb:LeadingKeys (the evaluation task and MarkRunFailed write RUN#* only).
     */
    this.table = new dynamodb.Table(this, 'Runs', {
      partitionKey: { name: TABLE_KEYS.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: TABLE_KEYS.ttlAttribute,
      deletionProtection: retain,
      removalPolicy,
    });
    this.table.addGlobalSecondaryIndex({
      indexName: TABLE_KEYS.gsi1Name,
      partitionKey: { name: TABLE_KEYS.gsi1PartitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.gsi1SortKey, type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.ALL,
    });
  }
}
