/**
 * The run schedules of `rcb cloud schedule`: EventBridge Scheduler in the deployed stack (its
 * group and role from the stack's outputs), a file of the state folder with --emulate.
 */
import { DescribeStacksCommand, type CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { EventBridgeRunScheduler } from '../adapters/aws/eventbridge-scheduler';
import type { RunScheduler } from '../core/cloud/run-schedules';
import type { BlobStore } from '../core/store';
import { FileRunScheduler } from '../emulator/emulated-schedules';
import { UsageError } from './local-machine';
import type { StackOutputs } from './deployed-stack';

/** The outputs of infra/rcb-stack.ts a schedule needs. */
export const SCHEDULE_OUTPUT_KEYS = { group: 'ScheduleGroupName', role: 'ScheduleRoleArn' } as const;

export async function deployedRunScheduler(
  cfn: CloudFormationClient,
  stackName: string,
  outputs: StackOutputs,
  region?: string,
  client: SchedulerClient = new SchedulerClient(region ? { region } : {}),
): Promise<RunScheduler> {
  const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
  const values = new Map((Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const group = values.get(SCHEDULE_OUTPUT_KEYS.group);
  const role = values.get(SCHEDULE_OUTPUT_KEYS.role);
  if (!group || !role)
    throw new UsageError(`stack ${stackName} has no ${SCHEDULE_OUTPUT_KEYS.group} output: deploy this version of rcb (npx cdk deploy) to schedule runs`);
  return new EventBridgeRunScheduler(client, { groupName: group, stateMachineArn: outputs.stateMachineArn, roleArn: role });
}

/** The emulated cloud's schedules, in its state folder. */
export function emulatedRunScheduler(stateDir: string): RunScheduler {
  return new FileRunScheduler(stateDir);
}

/**
 * A bucket that keeps nothing: the emulator's schedule needs only the run's workflow input
 * (its keys are content digests), and its firing uploads the run's inputs as `rcb cloud run
 * --emulate` does.
 */
export const DISCARDING_BLOBS: BlobStore = { put: async () => undefined, get: async () => null, list: async () => [] };
