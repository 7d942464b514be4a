import { Duration } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { parseLaneThrottleConfig } from '../../app/stages/generate';
import { DEFAULT_LANES } from '../../infra/config';
import { GenerationConstruct, type GenerationConstructProps } from '../../infra/generation-construct';
import { StorageConstruct } from '../../infra/storage-construct';
import { actionsOf, constructStack, flatten, logicalIdStartingWith, resourcesOfType, roleActions, oncePerProps, roleStatements } from './helpers';

/** The generation construct on a stack of its own, with the table and bucket it is given. */
/**
 * A function's environment variable as the text it gets at deploy time, each queue ARN
 * (`Fn::GetAtt [<queue>, Arn]` inside the template's `Fn::Join`) written `arn:<queue>`.
 */
function deployedVariable(value: unknown): string {
  const part = (p: unknown): string => {
    if (typeof p === 'string') return p;
    const getAtt = (p as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt'];
    if (getAtt && getAtt[1] === 'Arn') return `arn:${getAtt[0]}`;
    throw new Error(`unexpected part of an environment variable: ${JSON.stringify(p)}`);
  };
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  return join ? join[1].map(part).join(join[0]) : part(value);
}

const generationStack = oncePerProps(
  (props: Omit<GenerationConstructProps, 'table' | 'bucket'>) =>
    constructStack((stack) => {
      const { table, bucket } = new StorageConstruct(stack, 'Storage');
      return new GenerationConstruct(stack, 'Generation', { table, bucket, ...props });
    }),
  {},
);

describe('GenerationConstruct', () => {
  describe('lanes', () => {
    it('creates one queue and one dead-letter queue per default lane', () => {
      const { template } = generationStack();
      template.resourceCountIs('AWS::SQS::Queue', DEFAULT_LANES.length * 2);
    });

    it('gives every lane queue a redrive policy to its own DLQ after 3 receives', () => {
      const { template } = generationStack();
      for (const lane of DEFAULT_LANES) {
        const id = lane.name.charAt(0).toUpperCase() + lane.name.slice(1);
        const dlq = logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}DeadLetterQueue`);
        const queue = logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}Queue`);
        expect(resourcesOfType(template, 'AWS::SQS::Queue')[queue].Properties?.RedrivePolicy).toEqual({
          deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] },
          maxReceiveCount: 5,
        });
      }
    });

    it('sets each lane queue visibility timeout to six times the generator timeout', () => {
      const { template } = generationStack();
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp('calls one model'),
        Timeout: 600,
      });
      const queues = Object.entries(resourcesOfType(template, 'AWS::SQS::Queue')).filter(([id]) => !id.includes('DeadLetter'));
      expect(queues).toHaveLength(DEFAULT_LANES.length);
      for (const [, q] of queues) expect(q.Properties?.VisibilityTimeout).toBe(3600);

      const short = generationStack({ generatorTimeout: Duration.seconds(120) }).template;
      const shortQueues = Object.entries(resourcesOfType(short, 'AWS::SQS::Queue')).filter(([id]) => !id.includes('DeadLetter'));
      for (const [, q] of shortQueues) expect(q.Properties?.VisibilityTimeout).toBe(720);
    });

    it('encrypts every queue and keeps dead letters for 14 days', () => {
      const { template } = generationStack();
      for (const [id, q] of Object.entries(resourcesOfType(template, 'AWS::SQS::Queue'))) {
        expect(q.Properties?.SqsManagedSseEnabled).toBe(true);
        if (id.includes('DeadLetter')) expect(q.Properties?.MessageRetentionPeriod).toBe(14 * 24 * 3600);
      }
    });

    it('denies non-TLS access to every queue', () => {
      const { template } = generationStack();
      const policies = Object.values(resourcesOfType(template, 'AWS::SQS::QueuePolicy'));
      expect(policies).toHaveLength(DEFAULT_LANES.length * 2);
      for (const p of policies) {
        expect(p.Properties?.PolicyDocument.Statement).toEqual(
          expect.arrayContaining([expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
        );
      }
    });

    it('drains each lane with its batch size, maximum concurrency and partial batch failures', () => {
      const { template } = generationStack();
      // One mapping per lane queue to the generator, one per dead-letter queue to the dead-letter function.
      template.resourceCountIs('AWS::Lambda::EventSourceMapping', 2 * DEFAULT_LANES.length);
      for (const lane of DEFAULT_LANES) {
        const id = lane.name.charAt(0).toUpperCase() + lane.name.slice(1);
        const queue = logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}Queue`);
        template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
          EventSourceArn: { 'Fn::GetAtt': [queue, 'Arn'] },
          BatchSize: 1,
          ScalingConfig: { MaximumConcurrency: lane.maxConcurrency },
          FunctionResponseTypes: ['ReportBatchItemFailures'],
        });
      }
    });

    it('feeds every dead-letter queue to the dead-letter function, which may write completions but delete nothing', () => {
      const { template } = generationStack();
      // The mappings feed the `live` alias (docs/cloud.md, "Pins: a deploy during a run").
      const alias = logicalIdStartingWith(template, 'AWS::Lambda::Alias', 'GenerationDeadLetterFunctionAliaslive');
      for (const lane of DEFAULT_LANES) {
        const id = lane.name.charAt(0).toUpperCase() + lane.name.slice(1);
        const dlq = logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}DeadLetterQueue`);
        template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
          EventSourceArn: { 'Fn::GetAtt': [dlq, 'Arn'] },
          FunctionName: { 'Fn::Join': ['', [{ 'Fn::Select': [6, { 'Fn::Split': [':', { Ref: alias }] }] }, ':live']] },
          FunctionResponseTypes: ['ReportBatchItemFailures'],
        });
        // Six times the consumer's timeout, as AWS advises for SQS-fed functions.
        expect(resourcesOfType(template, 'AWS::SQS::Queue')[dlq].Properties?.VisibilityTimeout).toBe(360);
      }
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationDeadLetterRole');
      const actions = roleActions(template, role);
      expect(actions).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:Query']));
      expect(actions).not.toContain('dynamodb:DeleteItem');
      expect(actions.filter((a) => a.startsWith('secretsmanager:'))).toEqual([]);
    });

    it('builds the lanes given in props, with their own concurrency and batch size', () => {
      const { template } = generationStack({ lanes: [{ name: 'openai', maxConcurrency: 20, batchSize: 5 }] });
      template.resourceCountIs('AWS::SQS::Queue', 2);
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        BatchSize: 5,
        ScalingConfig: { MaximumConcurrency: 20 },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    });
  });

  describe('generator function', () => {
    it('runs Node.js 22 on arm64 with active tracing', () => {
      const { template } = generationStack();
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp('calls one model'),
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        Environment: {
          Variables: Match.objectLike({
            RCB_TABLE: Match.anyValue(),
            RCB_BUCKET: Match.anyValue(),
            RCB_KEYS_SECRET_ARN: { Ref: logicalIdStartingWith(template, 'AWS::SecretsManager::Secret', 'GenerationProviderKeys') },
          }),
        },
      });
    });

    it('gets RCB_LANES: each lane with its own queue ARN and concurrency, as the handler parses it', () => {
      for (const lanes of [DEFAULT_LANES, [{ name: 'openai', maxConcurrency: 20, batchSize: 5 }]]) {
        const { template } = generationStack(lanes === DEFAULT_LANES ? undefined : { lanes });
        const fn = logicalIdStartingWith(template, 'AWS::Lambda::Function', 'GenerationGenerator');
        const variables = resourcesOfType(template, 'AWS::Lambda::Function')[fn].Properties?.Environment?.Variables;
        const parsed = parseLaneThrottleConfig(deployedVariable(variables?.RCB_LANES));
        expect(parsed).toEqual(
          lanes.map((lane) => {
            const id = lane.name.charAt(0).toUpperCase() + lane.name.slice(1);
            const queue = logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}Queue`);
            return { name: lane.name, queueArn: `arn:${queue}`, maxConcurrency: lane.maxConcurrency };
          }),
        );
      }
    });

    it('has exactly the permissions generation needs', () => {
      const { template } = generationStack();
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationGeneratorRole');
      expect(roleActions(template, role)).toEqual([
        'bedrock:InvokeModel',
        'bedrock:InvokeModelWithResponseStream',
        'dynamodb:BatchGetItem',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        's3:GetObject',
        'secretsmanager:DescribeSecret',
        'secretsmanager:GetSecretValue',
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:ReceiveMessage',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ]);
      // It writes no object: completions go to the table (the s3:PutObject it once had was never used).
      expect(roleStatements(template, role).filter((s) => actionsOf(s).includes('s3:PutObject'))).toEqual([]);
      // Deletes only its generation claims: the one action, on task partitions of the table alone.
      const deletes = roleStatements(template, role).filter((s) => actionsOf(s).includes('dynamodb:DeleteItem'));
      expect(deletes).toHaveLength(1);
      expect(actionsOf(deletes[0])).toEqual(['dynamodb:DeleteItem']);
      expect(deletes[0].Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TASK#*'] } });
      expect(flatten(deletes[0].Resource)).toMatch(/^\$\{StorageRuns[0-9A-F]+\.Arn\}$/);
    });

    it('gets no Bedrock permission when no lane is named bedrock', () => {
      const { template } = generationStack({ lanes: [{ name: 'openai', maxConcurrency: 2 }] });
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationGeneratorRole');
      expect(roleActions(template, role).filter((a) => a.startsWith('bedrock:'))).toEqual([]);
    });
  });

  describe('batch round function', () => {
    it('has exactly what a round of the batch lane needs: the run and task partitions, reads of the run inputs, the keys; no queue, no delete, no write to the bucket', () => {
      const { template } = generationStack();
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationBatchRoundRole');
      expect(roleActions(template, role)).toEqual([
        'dynamodb:BatchGetItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        's3:GetObject',
        'secretsmanager:DescribeSecret',
        'secretsmanager:GetSecretValue',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ]);
      const table = roleStatements(template, role).filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
      expect(table).toHaveLength(1);
      expect(table[0].Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RUN#*', 'TASK#*'] } });
      expect(flatten(table[0].Resource)).not.toMatch(/index/);
    });

    it('may run Bedrock batch jobs only when configured: its jobs, the configured roles passed to Bedrock only, the configured S3 prefix', () => {
      const { template } = generationStack({ bedrockBatch: { roleArns: ['arn:aws:iam::123456789012:role/rcb-batch'], s3Uris: ['s3://team-bucket/rcb'] } });
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationBatchRoundRole');
      const statements = roleStatements(template, role);
      const passRole = statements.filter((s) => actionsOf(s).includes('iam:PassRole'));
      expect(passRole).toHaveLength(1);
      expect(passRole[0]).toMatchObject({
        Resource: 'arn:aws:iam::123456789012:role/rcb-batch',
        Condition: { StringEquals: { 'iam:PassedToService': 'bedrock.amazonaws.com' } },
      });
      const objects = statements.find((s) => actionsOf(s).includes('s3:PutObject'))!;
      expect(flatten(objects.Resource)).toBe('arn:${AWS::Partition}:s3:::team-bucket/rcb/*');
      const list = statements.find((s) => actionsOf(s).includes('s3:ListBucket'))!;
      expect(list.Condition).toEqual({ StringLike: { 's3:prefix': ['rcb/*'] } });
      const jobs = statements.find((s) => actionsOf(s).includes('bedrock:CreateModelInvocationJob'))!;
      expect(flatten(jobs.Resource)).toContain(':model-invocation-job/*');
      // Without the configuration (the default stack): no Bedrock action, no PassRole.
      const plain = roleActions(generationStack().template, logicalIdStartingWith(generationStack().template, 'AWS::IAM::Role', 'GenerationBatchRoundRole'));
      expect(plain.filter((a) => a.startsWith('bedrock:') || a === 'iam:PassRole')).toEqual([]);
    });

    it('knows the generation deadline and the pauses between rounds, and lives at most five minutes a round', () => {
      const { template } = generationStack();
      const fn = logicalIdStartingWith(template, 'AWS::Lambda::Function', 'GenerationBatchRoundFunction');
      const props = resourcesOfType(template, 'AWS::Lambda::Function')[fn].Properties!;
      expect(props.Timeout).toBe(300);
      expect(props.Environment.Variables).toMatchObject({ RCB_GENERATION_TIMEOUT_SEC: '86400', RCB_BATCH_POLL_MIN_SEC: '60', RCB_BATCH_POLL_MAX_SEC: '1200' });
      expect(props.Environment.Variables.RCB_KEYS_SECRET_ARN).toBeDefined();
    });
  });

  describe('provider keys secret', () => {
    it('denies GetSecretValue to every principal but the generator and batch round roles in its resource policy', () => {
      const { template } = generationStack();
      const generatorRole = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationGeneratorRole');
      const batchRoundRole = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationBatchRoundRole');
      template.hasResourceProperties('AWS::SecretsManager::ResourcePolicy', {
        ResourcePolicy: {
          Statement: [
            {
              Effect: 'Deny',
              Principal: { AWS: '*' },
              Action: 'secretsmanager:GetSecretValue',
              Resource: '*',
              Condition: { StringNotEquals: { 'aws:PrincipalArn': [{ 'Fn::GetAtt': [generatorRole, 'Arn'] }, { 'Fn::GetAtt': [batchRoundRole, 'Arn'] }] } },
              Sid: 'OnlyTheModelCallersReadProviderKeys',
            },
          ],
        },
      });
    });

    it('starts as an empty JSON object, so no key value is ever in the template', () => {
      const { template } = generationStack();
      template.hasResourceProperties('AWS::SecretsManager::Secret', { SecretString: '{}' });
    });
  });
});
