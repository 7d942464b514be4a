/**
 * `rcb cloud schedule`: a schedule's target starts the run workflow with the very input
 * `rcb cloud run` starts of the same flags (same run id, same budget), as the stack's schedule
 * role; list reads it back; and in the emulator a schedule's stored input, fired, starts the
 * run id the CLI gives those flags.
 */
import { mockClient } from 'aws-sdk-client-mock';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { CreateScheduleCommand, DeleteScheduleCommand, GetScheduleCommand, ListSchedulesCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CloudDeps } from '../../app/deployed-stack';
import { cloudRun } from '../../bin/commands/cloud/run';
import { scheduleAdd, scheduleList, scheduleRemove, type ScheduleAddOptions } from '../../bin/commands/cloud/schedule';
import { UsageError } from '../../bin/commands/common';
import { HostedModels } from '../../adapters/models/hosted-models';
import { loadRegistry } from '../../adapters/models/registry';
import { envKeySource } from '../../core/keys';
import { tempDir } from '../helpers/cli';

const cfnMock = mockClient(CloudFormationClient);
const s3Mock = mockClient(S3Client);
const sfnMock = mockClient(SFNClient);
const schedulerMock = mockClient(SchedulerClient);

const STATE_MACHINE = 'arn:aws:states:eu-west-1:111122223333:stateMachine:RunWorkflow1234';
const ROLE = 'arn:aws:iam::111122223333:role/Rcb-SchedulesStartRunRole';
const OUTPUTS = [
  { OutputKey: 'ArtifactsBucketName', OutputValue: 'rcb-artifacts' },
  { OutputKey: 'RunsTableName', OutputValue: 'rcb-runs' },
  { OutputKey: 'RunWorkflowArn', OutputValue: STATE_MACHINE },
  { OutputKey: 'ScheduleGroupName', OutputValue: 'Rcb-runs' },
  { OutputKey: 'ScheduleRoleArn', OutputValue: ROLE },
];

let out = '';
let err = '';
function deps(): CloudDeps {
  return {
    cfn: new CloudFormationClient({ region: 'eu-west-1' }),
    s3: new S3Client({ region: 'eu-west-1' }),
    doc: DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'eu-west-1' })),
    sfn: new SFNClient({ region: 'eu-west-1' }),
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    sleep: async () => undefined,
    pollMs: 0,
  };
}
const hosted = () => new HostedModels(loadRegistry(), envKeySource({}));
const FLAGS = { model: ['oracle', 'empty'], samples: '1', paper: true, timeout: '60', concurrency: '16', executor: 'warm', stackName: 'Rcb', budget: '12' };
const addOptions = (o: Partial<ScheduleAddOptions> = {}): ScheduleAddOptions => ({ ...FLAGS, cron: '0 2 ? * MON-FRI *', region: 'eu-west-1', ...o });

beforeEach(() => {
  for (const m of [cfnMock, s3Mock, sfnMock, schedulerMock]) m.reset();
  out = '';
  err = '';
  cfnMock.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'Rcb', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: OUTPUTS }] });
  s3Mock.on(PutObjectCommand).resolves({});
  schedulerMock.on(CreateScheduleCommand).resolves({ ScheduleArn: 'arn:aws:scheduler:eu-west-1:111122223333:schedule/Rcb-runs/nightly' });
});

describe('rcb cloud schedule add', () => {
  it('targets the run workflow with the input rcb cloud run starts of the same flags, budget included, as the schedule role', async () => {
    // Prepare: what `rcb cloud run --detach` starts.
    sfnMock.on(DescribeExecutionCommand).rejects(Object.assign(new Error('nope'), { name: 'ExecutionDoesNotExist' }));
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    expect(await cloudRun({ ...FLAGS, detach: true, skipDoctor: true }, hosted(), deps())).toBe(0);
    const started = sfnMock.commandCalls(StartExecutionCommand)[0].args[0].input;

    // Act
    const code = await scheduleAdd('nightly', addOptions(), hosted(), deps());

    // Assess
    expect(code).toBe(0);
    const created = schedulerMock.commandCalls(CreateScheduleCommand)[0].args[0].input;
    expect(created).toMatchObject({
      Name: 'nightly',
      GroupName: 'Rcb-runs',
      ScheduleExpression: 'cron(0 2 ? * MON-FRI *)',
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: { Arn: STATE_MACHINE, RoleArn: ROLE },
    });
    expect(JSON.parse(created.Target!.Input!)).toEqual(JSON.parse(started.input!));
    expect(JSON.parse(created.Target!.Input!).spec.budgetUsd).toBe(12);
    expect(out).toContain(`nightly  cron(0 2 ? * MON-FRI *) UTC  ENABLED  run ${started.name}  oracle, empty  budget $12.00`);
  });

  it('refuses a cron expression Scheduler would refuse, naming the flag, before any AWS call', async () => {
    await expect(scheduleAdd('nightly', addOptions({ cron: '0 2 * * *' }), hosted(), deps())).rejects.toThrow(UsageError);
    await expect(scheduleAdd('nightly', addOptions({ cron: '0 2 * * MON *' }), hosted(), deps())).rejects.toThrow(/--cron: exactly one of day-of-month/);
    await expect(scheduleAdd('night ly', addOptions(), hosted(), deps())).rejects.toThrow(/schedule name "night ly"/);
    expect(cfnMock.calls()).toHaveLength(0);
  });
});

describe('rcb cloud schedule list and remove', () => {
  it("list reads each schedule's run back from its target; remove deletes it, and says when there is none", async () => {
    const input = { runId: 'r1', spec: { models: [{ id: 'oracle', params: {} }], budgetUsd: 3 }, models: {} };
    schedulerMock.on(ListSchedulesCommand).resolves({ Schedules: [{ Name: 'nightly' }] });
    schedulerMock.on(GetScheduleCommand).resolves({
      Name: 'nightly',
      ScheduleExpression: 'cron(0 2 ? * * *)',
      ScheduleExpressionTimezone: 'Europe/Paris',
      State: 'ENABLED',
      Target: { Arn: STATE_MACHINE, RoleArn: ROLE, Input: JSON.stringify(input) },
    });
    schedulerMock.on(DeleteScheduleCommand, { Name: 'nightly' }).resolves({});
    schedulerMock.on(DeleteScheduleCommand, { Name: 'gone' }).rejects(Object.assign(new Error('not found'), { name: 'ResourceNotFoundException' }));

    expect(await scheduleList({ stackName: 'Rcb', region: 'eu-west-1' }, deps())).toBe(0);
    expect(out).toBe('nightly  cron(0 2 ? * * *) Europe/Paris  ENABLED  run r1  oracle  budget $3.00\n');
    expect(await scheduleRemove('nightly', { stackName: 'Rcb', region: 'eu-west-1' }, deps())).toBe(0);
    await expect(scheduleRemove('gone', { stackName: 'Rcb', region: 'eu-west-1' }, deps())).rejects.toThrow('no schedule named gone');
  });
});

describe('rcb cloud schedule --emulate', () => {
  it('keeps the schedule in the state folder, with the run id rcb cloud run gives the same flags', async () => {
    const stateDir = tempDir('rcb-schedule-state-');
    sfnMock.on(DescribeExecutionCommand).rejects(Object.assign(new Error('nope'), { name: 'ExecutionDoesNotExist' }));
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    await cloudRun({ ...FLAGS, detach: true, skipDoctor: true }, hosted(), deps());
    const runId = sfnMock.commandCalls(StartExecutionCommand)[0].args[0].input.name;

    await scheduleAdd('weekly', addOptions({ emulate: true, stateDir, cron: '0 3 ? * SUN *' }), hosted(), deps());
    out = '';
    await scheduleList({ stackName: 'Rcb', emulate: true, stateDir }, deps());

    expect(out).toBe(`weekly  cron(0 3 ? * SUN *) UTC  ENABLED  run ${runId}  oracle, empty  budget $12.00\n`);
    await expect(scheduleAdd('weekly', addOptions({ emulate: true, stateDir }), hosted(), deps())).rejects.toThrow('a schedule named weekly exists');
  });
});
