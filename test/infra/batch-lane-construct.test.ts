import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { BatchLaneConstruct } from '../../infra/batch-lane-construct';
import { STATE_NAMES } from '../../infra/state-names';

describe('BatchLaneConstruct', () => {
  function definition(): Record<string, any> {
    const stack = new Stack(new App(), 'S');
    const batchRound = new lambda.Function(stack, 'Round', {
      runtime: lambda.Runtime.NODEJS_20_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler = async () => ({})'),
    });
    const lane = new BatchLaneConstruct(stack, 'Lane', { batchRound });
    new sfn.StateMachine(stack, 'Workflow', { definitionBody: sfn.DefinitionBody.fromChainable(lane) });
    const [machine] = Object.values(Template.fromStack(stack).findResources('AWS::StepFunctions::StateMachine'));
    const parts = (machine as any).Properties.DefinitionString['Fn::Join'][1] as unknown[];
    return JSON.parse(parts.map((x) => (typeof x === 'string' ? x : 'ARN')).join(''));
  }

  test('polls in a loop of round, choice and wait: the state machine waits, no Lambda does', () => {
    const d = definition();

    expect(d.StartAt).toBe(STATE_NAMES.batchRound);
    expect(d.States.BatchRound).toMatchObject({ Type: 'Task', Next: 'BatchesPending?', ResultPath: '$.batch' });
    expect(d.States.BatchRound.Parameters).toEqual({ 'runId.$': '$.runId', 'startedAt.$': '$$.Execution.StartTime', 'deadlineSec.$': '$.plan.deadlineSec' });
    expect(d.States['BatchesPending?'].Choices).toEqual([{ Variable: '$.batch.pendingBatches', NumericGreaterThan: 0, Next: 'WaitForBatches' }]);
    expect(d.States['BatchesPending?'].Default).toBe('BatchesDone');
    expect(d.States.BatchRound.Retry.map((r: { ErrorEquals: string[] }) => r.ErrorEquals)).toContainEqual(['States.TaskFailed']);
  });

  test("waits as long as the round says (its pause grows with the execution's age)", () => {
    const d = definition();
    expect(d.States.WaitForBatches).toEqual({ Type: 'Wait', SecondsPath: '$.batch.waitSec', Next: 'BatchRound' });
    expect(d.States.BatchRound.ResultSelector).toBeUndefined();
  });
});
