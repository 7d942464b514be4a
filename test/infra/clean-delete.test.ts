/**
 * What `cdk destroy` leaves, read from the synthesized default stack: every resource's
 * DeletionPolicy, and every log group a service would otherwise create outside the template
 * (a Lambda function without a log group of its own gets `/aws/lambda/<name>`, which no stack
 * deletes; Container Insights makes `/aws/ecs/containerinsights/...`). Only the run table and
 * the artifacts bucket are kept (rcb:retainData, the default); docs/cloud.md "Remove" says what
 * each of the others does on delete and how to delete those two.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, resourcesOfType, sharedStack } from './helpers';

type Resource = { Type: string; DeletionPolicy?: string; UpdateReplacePolicy?: string; Properties?: Record<string, any> };

const resources = (): Record<string, Resource> => sharedStack().template.toJSON().Resources as Record<string, Resource>;

/** CloudFormation's default, for a resource without a DeletionPolicy, is Delete. */
const onDelete = (r: Resource) => r.DeletionPolicy ?? 'Delete';

/** The logical id a `{ Ref }` or `{ Fn::GetAtt: [id, ...] }` names. */
function refOf(value: any): string | undefined {
  return value?.Ref ?? value?.['Fn::GetAtt']?.[0];
}

describe('cdk destroy', () => {
  it('keeps only the run table and the artifacts bucket', () => {
    const all = resources();
    // Lambda versions are retained so that a deploy keeps the ones a run pinned (docs/cloud.md,
    // "Pins"); deleting their function deletes every version of it, so none is left behind.
    const versions = Object.values(all).filter((r) => r.Type === 'AWS::Lambda::Version');
    expect(versions.length).toBeGreaterThanOrEqual(7);
    for (const v of versions) expect(onDelete(all[refOf(v.Properties?.FunctionName) as string])).toBe('Delete');
    const kept = Object.entries(all)
      .filter(([, r]) => onDelete(r) !== 'Delete' && r.Type !== 'AWS::Lambda::Version')
      .map(([, r]) => [r.Type, onDelete(r)]);
    expect(kept.sort()).toEqual([
      ['AWS::DynamoDB::Table', 'Retain'],
      ['AWS::S3::Bucket', 'Retain'],
    ]);
  });

  it('deregisters the shard task definition, while a deploy keeps the revision it replaces (runs pinned to it)', () => {
    const [task] = Object.values(resources()).filter((r) => r.Type === 'AWS::ECS::TaskDefinition');
    expect([task.DeletionPolicy, task.UpdateReplacePolicy]).toEqual(['Delete', 'Retain']);
  });

  it('gives every function a log group of the stack, deleted with it: no log group is left that Lambda made', () => {
    const all = resources();
    const functions = Object.entries(all).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    // The 7 stages, the prefix-list lookup, and CDK's default-security-group provider.
    expect(functions).toHaveLength(9);
    for (const [id, fn] of functions) {
      const group = refOf(fn.Properties?.LoggingConfig?.LogGroup);
      expect([id, group && all[group]?.Type]).toEqual([id, 'AWS::Logs::LogGroup']);
      expect([id, onDelete(all[group as string])]).toEqual([id, 'Delete']);
    }
  });

  it('sends the workflow, the shard tasks and the flow log to log groups of the stack, and no Container Insights group is made', () => {
    const all = resources();
    const groupOf = (value: unknown) => {
      const id = refOf(value);
      return id && all[id]?.Type === 'AWS::Logs::LogGroup' ? onDelete(all[id]) : 'not a log group of the stack';
    };
    const [machine] = Object.values(all).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine');
    expect(groupOf(machine.Properties?.LoggingConfiguration?.Destinations?.[0]?.CloudWatchLogsLogGroup?.LogGroupArn)).toBe('Delete');
    const [task] = Object.values(all).filter((r) => r.Type === 'AWS::ECS::TaskDefinition');
    for (const c of task.Properties?.ContainerDefinitions ?? []) expect(groupOf(c.LogConfiguration?.Options?.['awslogs-group'])).toBe('Delete');
    const flowLogs = Object.values(all).filter((r) => r.Type === 'AWS::EC2::FlowLog');
    expect(flowLogs.length).toBeGreaterThan(0);
    for (const f of flowLogs) expect(groupOf(f.Properties?.LogGroupName)).toBe('Delete');
    const [cluster] = Object.values(all).filter((r) => r.Type === 'AWS::ECS::Cluster');
    expect(cluster.Properties?.ClusterSettings).toEqual([{ Name: 'containerInsights', Value: 'disabled' }]);
  });

  it('empties and deletes the image repository, schedules the KMS key for deletion in 7 days, deletes the secret and the topic', () => {
    const all = Object.values(resources());
    const one = (type: string) => {
      const found = all.filter((r) => r.Type === type);
      expect([type, found.length]).toEqual([type, 1]);
      return found[0];
    };
    const repo = one('AWS::ECR::Repository');
    expect([onDelete(repo), repo.Properties?.EmptyOnDelete]).toEqual(['Delete', true]);
    const key = one('AWS::KMS::Key');
    expect([onDelete(key), key.Properties?.PendingWindowInDays]).toEqual(['Delete', 7]);
    expect(onDelete(one('AWS::SecretsManager::Secret'))).toBe('Delete');
    expect(onDelete(one('AWS::SNS::Topic'))).toBe('Delete');
  });

  it('is described in docs/cloud.md "Remove" with the commands that delete the table and the bucket', () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs', 'cloud.md'), 'utf8');
    const remove = doc.slice(doc.indexOf('### Remove'), doc.indexOf('## Running in the cloud'));
    expect(Object.keys(resourcesOfType(sharedStack().template, 'AWS::DynamoDB::Table'))).toHaveLength(1);
    for (const needed of ['aws dynamodb delete-table', 'aws s3 rb', 'list-object-versions', 'deregister-task-definition', 'delete-task-definitions']) {
      expect([needed, remove.includes(needed)]).toEqual([needed, true]);
    }
  });
});
