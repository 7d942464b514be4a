import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';

export interface ScheduleConstructProps {
  /** The run workflow: the one thing a schedule may start. */
  readonly stateMachine: sfn.IStateMachine;
  /**
   * The schedule group `rcb cloud schedule` creates schedules in.
   * @default '<stack name>-runs'
   */
  readonly groupName?: string;
}

/**
 * Scheduled runs (docs/cloud.md#schedules): a schedule group for `rcb cloud schedule add` and
 * the role its schedules start the run workflow with, which may start that workflow and nothing
 * else, assumed by EventBridge Scheduler for schedules of this account only.
 */
export class ScheduleConstruct extends Construct {
  public readonly group: scheduler.CfnScheduleGroup;
  public readonly groupName: string;
  /** The role every schedule of the group runs as. */
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: ScheduleConstructProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.groupName = props.groupName ?? `${stack.stackName}-runs`;
    this.group = new scheduler.CfnScheduleGroup(this, 'Group', { name: this.groupName });
    this.role = new iam.Role(this, 'StartRunRole', {
      description: 'rcb: EventBridge Scheduler starts the run workflow with the run input of a schedule, and nothing else',
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
    });
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['states:StartExecution'], resources: [props.stateMachine.stateMachineArn] }));
  }

  /** What a runner needs to manage the group's schedules: create, read, delete them, and pass the role to Scheduler only. */
  runnerStatements(): iam.PolicyStatement[] {
    const schedules = Stack.of(this).formatArn({
      service: 'scheduler',
      resource: 'schedule',
      resourceName: `${this.groupName}/*`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
    return [
      new iam.PolicyStatement({
        sid: 'ManageRunSchedules',
        actions: ['scheduler:CreateSchedule', 'scheduler:GetSchedule', 'scheduler:DeleteSchedule'],
        resources: [schedules],
      }),
      // ListSchedules has no resource of its own (the group is a request parameter).
      new iam.PolicyStatement({ sid: 'ListRunSchedules', actions: ['scheduler:ListSchedules'], resources: ['*'] }),
      new iam.PolicyStatement({
        sid: 'PassTheScheduleRole',
        actions: ['iam:PassRole'],
        resources: [this.role.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    ];
  }
}
