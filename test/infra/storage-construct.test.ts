import { Match } from 'aws-cdk-lib/assertions';
import { StorageConstruct, type StorageConstructProps } from '../../infra/storage-construct';
import { constructStack, oncePerProps, resourcesOfType } from './helpers';

/** The storage construct alone on a stack of its own. */
const storageStack = oncePerProps((props: StorageConstructProps) => constructStack((stack) => new StorageConstruct(stack, 'Storage', props)), {});

describe('StorageConstruct', () => {
  describe('artifacts bucket', () => {
    it('encrypts objects at rest with S3-managed keys', () => {
      const { template } = storageStack();
      template.hasResourceProperties('AWS::S3::Bucket', {
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
      });
    });

    it('blocks every form of public access and enforces bucket-owner object ownership', () => {
      const { template } = storageStack();
      template.hasResourceProperties('AWS::S3::Bucket', {
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      });
    });

    it('denies requests without TLS (and below TLS 1.2) in the bucket policy', () => {
      const { template } = storageStack();
      template.hasResourceProperties('AWS::S3::BucketPolicy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
            Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } } }),
          ]),
        },
      });
    });

    it('expires run artifacts after 180 days by default and cleans up uploads and old versions', () => {
      const { template } = storageStack();
      template.hasResourceProperties('AWS::S3::Bucket', {
        VersioningConfiguration: { Status: 'Enabled' },
        LifecycleConfiguration: {
          Rules: Match.arrayWith([
            Match.objectLike({ Id: 'run-artifacts', Prefix: 'runs/', ExpirationInDays: 180, Status: 'Enabled' }),
            Match.objectLike({
              Id: 'housekeeping',
              AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
              NoncurrentVersionExpiration: { NoncurrentDays: 30 },
              Status: 'Enabled',
            }),
          ]),
        },
      });
    });

    it('keeps run artifacts forever when the retention is 0 days', () => {
      const { template } = storageStack({ artifactRetentionDays: 0 });
      const [bucket] = Object.values(resourcesOfType(template, 'AWS::S3::Bucket'));
      const rules = bucket.Properties?.LifecycleConfiguration.Rules as Array<Record<string, unknown>>;
      expect(rules.filter((r) => r.ExpirationInDays !== undefined)).toEqual([]);
      expect(rules.map((r) => r.Id)).toEqual(['housekeeping']);
    });

    it('survives stack deletion by default, and not when retainData is false', () => {
      expect(storageStack().template.findResources('AWS::S3::Bucket', { DeletionPolicy: 'Retain' })).not.toEqual({});
      expect(storageStack({ retainData: false }).template.findResources('AWS::S3::Bucket', { DeletionPolicy: 'Delete' })).not.toEqual({});
    });
  });

  describe('runs table', () => {
    it('is on-demand with point-in-time recovery, encryption and the expiresAt TTL', () => {
      const { template } = storageStack();
      template.hasResourceProperties('AWS::DynamoDB::Table', {
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      });
    });

    it('has the single-table keys pk/sk and the gsi1 index the RunStore adapter queries', () => {
      const { template } = storageStack();
      template.hasResourceProperties('AWS::DynamoDB::Table', {
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: Match.arrayWith([
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
          { AttributeName: 'gsi1pk', AttributeType: 'S' },
          { AttributeName: 'gsi1sk', AttributeType: 'S' },
        ]),
        GlobalSecondaryIndexes: [
          {
            IndexName: 'gsi1',
            KeySchema: [
              { AttributeName: 'gsi1pk', KeyType: 'HASH' },
              { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      });
    });

    it('is retained and deletion-protected by default, and neither when retainData is false', () => {
      const kept = storageStack().template;
      kept.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', Properties: Match.objectLike({ DeletionProtectionEnabled: true }) });
      const disposable = storageStack({ retainData: false }).template;
      disposable.hasResource('AWS::DynamoDB::Table', {
        DeletionPolicy: 'Delete',
        Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
      });
    });
  });
});
