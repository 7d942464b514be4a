/**
 * What every `rcb cloud` command needs of a deployed stack: the SDK clients, the stack's
 * outputs (bucket, table, state machine) from CloudFormation by stack name, the AWS
 * adapters over them, and the run's executions through Step Functions. The commands load
 * this module on use (bin/commands/cloud/register-cloud-commands.ts): registering them costs `rcb validate`
 * no SDK.
 */
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, SFNClient, StopExecutionCommand, type StartExecutionCommand } from '@aws-sdk/client-sfn';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoRunStore } from '../adapters/aws/dynamo-run-store';
import { S3BlobStore } from '../adapters/aws/s3-blob-store';
import { DynamoEnvironmentChecks } from '../adapters/aws/dynamo-environment-checks';
import type { BlobStore, RunStore } from '../core/store';
import type { EnvironmentChecks, RunCounters } from '../core/cloud/ports';
import type { ExecutionStatus, RunExecutions } from '../core/cloud/execution-attempts';
import { UsageError } from './local-machine';

/** The stack outputs the commands need (infra/rcb-stack.ts CfnOutputs). */
export interface StackOutputs {
  bucket: string;
  table: string;
  stateMachineArn: string;
}

export const OUTPUT_KEYS = { bucket: 'ArtifactsBucketName', table: 'RunsTableName', stateMachineArn: 'RunWorkflowArn' } as const;

/** What the commands talk to; tests mock the clients with aws-sdk-client-mock. */
export interface CloudDeps {
  cfn: CloudFormationClient;
  s3: S3Client;
  doc: DynamoDBDocumentClient;
  sfn: SFNClient;
  out: (text: string) => void;
  err: (text: string) => void;
  sleep: (ms: number) => Promise<void>;
  /** Pause between two progress polls of a watched run, ms. */
  pollMs: number;
}

/** SDK clients for the region given (else the SDK's own resolution: AWS_REGION, profile). */
export function defaultCloudDeps(region?: string): CloudDeps {
  const config = region ? { region } : {};
  return {
    cfn: new CloudFormationClient(config),
    s3: new S3Client(config),
    doc: DynamoDBDocumentClient.from(new DynamoDBClient(config), { marshallOptions: { removeUndefinedValues: true } }),
    sfn: new SFNClient(config),
    ...consoleOutput(),
    pollMs: 10_000,
  };
}

/** stdout, stderr and a timer: what the emulated commands use of CloudDeps. */
export function consoleOutput(): Pick<CloudDeps, 'out' | 'err' | 'sleep'> {
  return {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  };
}

export async function findStackOutputs(cfn: CloudFormationClient, stackName: string): Promise<StackOutputs> {
  let stacks;
  try {
    ({ Stacks: stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName })));
  } catch (e) {
    const err = e as Error;
    if (/does not exist/.test(err.message))
      throw new UsageError(`stack ${stackName} does not exist in this account and region; deploy it (npx cdk deploy) or pass --stack-name/--region`);
    // No region anywhere (flag, AWS_REGION, profile): the usual case of a machine that only ever emulated.
    if (/Region is missing/i.test(err.message)) {
      throw new UsageError(
        'no AWS region: pass --region or set AWS_REGION (or a profile region) to reach a deployed stack; for a run of `rcb cloud run --emulate`, add --emulate',
      );
    }
    throw new UsageError(`cannot describe stack ${stackName}: ${err.message}`);
  }
  const outputs = new Map((stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const get = (key: string): string => {
    const value = outputs.get(key);
    if (!value) throw new UsageError(`stack ${stackName} has no output ${key}: is it an rcb stack, fully deployed?`);
    return value;
  };
  return { bucket: get(OUTPUT_KEYS.bucket), table: get(OUTPUT_KEYS.table), stateMachineArn: get(OUTPUT_KEYS.stateMachineArn) };
}

/** `arn:aws:states:R:A:stateMachine:NAME` + execution name -> `arn:aws:states:R:A:execution:NAME:EXECUTION`. */
export function executionArn(stateMachineArn: string, name: string): string {
  const parts = stateMachineArn.split(':');
  if (parts.length < 7 || parts[5] !== 'stateMachine') throw new Error(`not a state machine ARN: ${stateMachineArn}`);
  return [...parts.slice(0, 5), 'execution', parts[6], name].join(':');
}

/** The stack's run store (with its counters) and bucket. */
export function stackAdapters(
  deps: CloudDeps,
  outputs: StackOutputs,
): { store: RunStore; counters: RunCounters; blobs: BlobStore; environments: EnvironmentChecks } {
  const blobs = new S3BlobStore(deps.s3, { bucket: outputs.bucket });
  const store = new DynamoRunStore(deps.doc, { tableName: outputs.table, blobs });
  return { store, counters: store, blobs, environments: new DynamoEnvironmentChecks(deps.doc, { tableName: outputs.table }) };
}

/** The run's executions through Step Functions; `startCommand` builds the StartExecution of a name (rcb cloud run only). */
export function stackExecutions(deps: CloudDeps, outputs: StackOutputs, startCommand?: (name: string) => StartExecutionCommand): RunExecutions {
  const describe = async (name: string) => {
    try {
      return await deps.sfn.send(new DescribeExecutionCommand({ executionArn: executionArn(outputs.stateMachineArn, name) }));
    } catch (e) {
      if ((e as Error).name === 'ExecutionDoesNotExist') return undefined;
      throw e;
    }
  };
  return {
    async start(name) {
      if (!startCommand) throw new Error('no execution to start here');
      try {
        await deps.sfn.send(startCommand(name));
        return true;
      } catch (e) {
        if ((e as Error).name === 'ExecutionAlreadyExists') return false;
        throw e;
      }
    },
    async status(name) {
      return ((await describe(name))?.status ?? null) as ExecutionStatus | null;
    },
    async describe(name) {
      const d = await describe(name);
      if (!d?.status) return null;
      return { status: d.status as ExecutionStatus, startDate: d.startDate, stopDate: d.stopDate, error: d.error, cause: d.cause };
    },
    async stop(name, error, cause) {
      await deps.sfn.send(new StopExecutionCommand({ executionArn: executionArn(outputs.stateMachineArn, name), error, cause }));
    },
  };
}
