/**
 * Run schedules on EventBridge Scheduler (core/cloud/run-schedules.ts): one schedule per name in
 * the stack's group, its target the run workflow started with the run's workflow input, as the
 * stack's schedule role (which may start that workflow only).
 */
import { CreateScheduleCommand, DeleteScheduleCommand, GetScheduleCommand, ListSchedulesCommand, type SchedulerClient } from '@aws-sdk/client-scheduler';
import type { RunWorkflowInput } from '../../core/cloud/payloads';
import { ScheduleInputError, scheduleInputText, type RunSchedule, type RunScheduler } from '../../core/cloud/run-schedules';

export interface SchedulerTarget {
  /** The stack's schedule group (output ScheduleGroupName). */
  groupName: string;
  /** The run workflow (output RunWorkflowArn). */
  stateMachineArn: string;
  /** The role schedules start it as (output ScheduleRoleArn). */
  roleArn: string;
}

export class EventBridgeRunScheduler implements RunScheduler {
  constructor(
    private readonly client: SchedulerClient,
    private readonly target: SchedulerTarget,
  ) {}

  async create(s: RunSchedule): Promise<void> {
    const input = scheduleInputText(s.input);
    try {
      await this.client.send(
        new CreateScheduleCommand({
          Name: s.name,
          GroupName: this.target.groupName,
          ScheduleExpression: `cron(${s.cron})`,
          ScheduleExpressionTimezone: s.timezone,
          FlexibleTimeWindow: { Mode: 'OFF' },
          State: s.state === 'DISABLED' ? 'DISABLED' : 'ENABLED',
          Description: `rcb run ${s.input.runId}`,
          // A firing that Step Functions refuses (throttled) is tried again; the run is resumable.
          Target: { Arn: this.target.stateMachineArn, RoleArn: this.target.roleArn, Input: input, RetryPolicy: { MaximumRetryAttempts: 5 } },
        }),
      );
    } catch (e) {
      if ((e as Error).name === 'ConflictException') throw new ScheduleInputError(`a schedule named ${s.name} exists: remove it first`);
      throw e;
    }
  }

  async list(): Promise<RunSchedule[]> {
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListSchedulesCommand({ GroupName: this.target.groupName, NextToken: token }));
      names.push(...(page.Schedules ?? []).map((x) => x.Name!).filter(Boolean));
      token = page.NextToken;
    } while (token);
    const out: RunSchedule[] = [];
    for (const name of names.sort()) {
      const s = await this.client.send(new GetScheduleCommand({ Name: name, GroupName: this.target.groupName }));
      const cron = /^cron\((.*)\)$/.exec(s.ScheduleExpression ?? '')?.[1];
      // Schedules of the group that rcb did not make (no cron, another target) are not its runs.
      if (!cron || s.Target?.Arn !== this.target.stateMachineArn || !s.Target.Input) continue;
      out.push({
        name,
        cron,
        timezone: s.ScheduleExpressionTimezone ?? 'UTC',
        state: s.State ?? 'ENABLED',
        input: JSON.parse(s.Target.Input) as RunWorkflowInput,
      });
    }
    return out;
  }

  async remove(name: string): Promise<boolean> {
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.target.groupName }));
      return true;
    } catch (e) {
      if ((e as Error).name === 'ResourceNotFoundException') return false;
      throw e;
    }
  }
}
