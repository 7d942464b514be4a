import { Arn, ArnFormat, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';

/** The service a shard task's roles may be passed to, and nothing else. */
export const ECS_TASKS_SERVICE = 'ecs-tasks.amazonaws.com';

/**
 * The EvaluateShard state: an ECS RunTask whose grants to the state machine are scoped.
 * CDK's EcsRunTask allows ecs:StopTask and ecs:DescribeTasks on "*" (any task of the
 * account) and iam:PassRole to any service; here they are the tasks of the shard cluster
 * only, RunTask only in that cluster, and PassRole only to ECS tasks. Both actions take a
 * task ARN and the ecs:cluster key (AWS service authorization reference, Amazon ECS).
 */
export class ShardRunTask extends tasks.EcsRunTask {
  declare protected readonly taskPolicies: iam.PolicyStatement[];

  constructor(scope: Construct, id: string, props: tasks.EcsRunTaskProps) {
    super(scope, id, props);
    const stack = Stack.of(this);
    const clusterTasks = Arn.format(
      { service: 'ecs', resource: 'task', resourceName: `${props.cluster.clusterName}/*`, arnFormat: ArnFormat.SLASH_RESOURCE_NAME },
      stack,
    );
    const generated = this.taskPolicies ?? [];
    this.taskPolicies = generated.map((statement) => {
      const actions = statement.actions;
      if (actions.includes('ecs:StopTask') || actions.includes('ecs:DescribeTasks')) {
        return new iam.PolicyStatement({ actions, resources: [clusterTasks] });
      }
      if (actions.includes('ecs:RunTask')) {
        statement.addCondition('ArnEquals', { 'ecs:cluster': props.cluster.clusterArn });
      } else if (actions.includes('iam:PassRole')) {
        statement.addCondition('StringEquals', { 'iam:PassedToService': ECS_TASKS_SERVICE });
      }
      return statement;
    });
  }
}
