import { Arn, ArnFormat, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';

/** The service a shard task's roles may be passed to, and nothing else. */
export const ECS_TASKS_SERVICE = 'ecs-tasks.amazonaws.com';

/** Tag keys every shard task carries (RunTask `Tags`), for cost allocation and clean-up by run. */
export const SHARD_TASK_TAGS = { run: 'rcb:run', execution: 'rcb:execution', shard: 'rcb:shard' } as const;

export interface ShardRunTaskProps extends tasks.EcsRunTaskProps {
  /**
   * Path of the task definition revision ARN in the state's input: the run's pin (PlanRun),
   * so every shard of a run uses the revision it began with, whatever was deployed since.
   */
  readonly taskDefinitionArnPath: string;
  /** Paths of the tag values in the state's input (run id, parent execution name, shard paper). */
  readonly tagPaths: Record<keyof typeof SHARD_TASK_TAGS, string>;
}

/**
 * The EvaluateShard state: an ECS RunTask whose grants to the state machine are scoped.
 * CDK's EcsRunTask allows ecs:StopTask and ecs:DescribeTasks on "*" (any task of the
 * account) and iam:PassRole to any service; here they are the tasks of the shard cluster
 * only, RunTask only in that cluster, and PassRole only to ECS tasks. Both actions take a
 * task ARN and the ecs:cluster key (AWS service authorization reference, Amazon ECS).
 *
 * The task definition is not the family (CDK's rendering, which picks whatever revision is
 * latest at each RunTask) but the revision ARN at `taskDefinitionArnPath`; RunTask is then
 * allowed on every revision of the family (`<family>:*`), as a pinned run may name an older
 * one. Each task is tagged with its run, execution and shard (ecs:TagResource, allowed only
 * on this cluster's tasks and only as part of RunTask: the ecs:CreateAction condition).
 */
export class ShardRunTask extends tasks.EcsRunTask {
  declare protected readonly taskPolicies: iam.PolicyStatement[];
  private readonly pinPath: string;
  private readonly tagPaths: ShardRunTaskProps['tagPaths'];

  constructor(scope: Construct, id: string, props: ShardRunTaskProps) {
    super(scope, id, props);
    this.pinPath = props.taskDefinitionArnPath;
    this.tagPaths = props.tagPaths;
    const stack = Stack.of(this);
    const clusterTasks = Arn.format(
      { service: 'ecs', resource: 'task', resourceName: `${props.cluster.clusterName}/*`, arnFormat: ArnFormat.SLASH_RESOURCE_NAME },
      stack,
    );
    const family = Arn.format(
      { service: 'ecs', resource: 'task-definition', resourceName: `${props.taskDefinition.family}:*`, arnFormat: ArnFormat.SLASH_RESOURCE_NAME },
      stack,
    );
    const generated = this.taskPolicies ?? [];
    this.taskPolicies = generated.map((statement) => {
      const actions = statement.actions;
      if (actions.includes('ecs:StopTask') || actions.includes('ecs:DescribeTasks')) {
        return new iam.PolicyStatement({ actions, resources: [clusterTasks] });
      }
      if (actions.includes('ecs:RunTask')) {
        return new iam.PolicyStatement({ actions, resources: [family], conditions: { ArnEquals: { 'ecs:cluster': props.cluster.clusterArn } } });
      }
      if (actions.includes('iam:PassRole')) {
        statement.addCondition('StringEquals', { 'iam:PassedToService': ECS_TASKS_SERVICE });
      }
      return statement;
    });
    this.taskPolicies.push(
      new iam.PolicyStatement({ actions: ['ecs:TagResource'], resources: [clusterTasks], conditions: { StringEquals: { 'ecs:CreateAction': 'RunTask' } } }),
    );
  }

  /** CDK's rendering, with the pinned revision in place of the family and the run's tags. */
  protected override _renderTask(topLevelQueryLanguage?: sfn.QueryLanguage): any {
    const rendered = super._renderTask(topLevelQueryLanguage) as { Parameters?: Record<string, unknown> };
    const params = rendered.Parameters;
    if (!params) throw new Error('ShardRunTask: expected a JSONPath RunTask (Parameters), got none');
    delete params.TaskDefinition;
    params['TaskDefinition.$'] = this.pinPath;
    params.Tags = (Object.keys(SHARD_TASK_TAGS) as Array<keyof typeof SHARD_TASK_TAGS>).map((k) => ({ Key: SHARD_TASK_TAGS[k], 'Value.$': this.tagPaths[k] }));
    return rendered;
  }
}
