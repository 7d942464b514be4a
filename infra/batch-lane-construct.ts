import { Duration } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';
import { STATE_NAMES } from './state-names';
import { lambdaTask } from './lambda-retry';

/** Retry of a failed round: the batches are in the ledger, so a round tried again loses nothing and sends nothing twice. */
export const BATCH_ROUND_RETRY: sfn.RetryProps = { errors: ['States.TaskFailed'], interval: Duration.seconds(30), maxAttempts: 2, backoffRate: 2 };

export interface BatchLaneConstructProps {
  /**
   * One round of the batch lane: functions/batch-round (core/cloud/batch-round.ts) for the
   * run of `$.runId`: submit what fits, poll each pending batch once, ingest the ended ones.
   * Its payload answers `{ pendingBatches, open, settled, submitted, waitSec }`.
   */
  readonly batchRound: lambda.IFunction;
}

/**
 * The cloud batch lane, a state machine fragment: BatchRound, then a Choice that ends the
 * fragment when no batch is pending (every task answered, or nothing more can be sent: the
 * budget, a cancel) and otherwise waits `$.batch.waitSec` (which the round sets from the
 * execution's age) and runs the next round. No Lambda waits on a batch: the state machine
 * does. The orchestrator runs it in a Parallel branch beside the SQS lanes' progress loop.
 * The history stays bounded: three states per round, and the pause grows to 15 minutes, so
 * about 120 rounds over the providers' 24 h window (test/infra/history-bound.test.ts).
 */
export class BatchLaneConstruct extends sfn.StateMachineFragment {
  public readonly startState: sfn.State;
  public readonly endStates: sfn.INextable[];
  public readonly round: tasks.LambdaInvoke;

  constructor(scope: Construct, id: string, props: BatchLaneConstructProps) {
    super(scope, id);
    this.round = lambdaTask(this, 'Round', {
      stateName: STATE_NAMES.batchRound,
      comment: 'Submit what fits, poll each pending batch once, ingest the ended ones',
      lambdaFunction: props.batchRound,
      // The execution's start: a run started again polls young again. The run's own deadline
      // (rcb cloud run --deadline, PlanRun's deadlineSec): the lane cancels and fails by it.
      payload: sfn.TaskInput.fromObject({
        runId: sfn.JsonPath.stringAt('$.runId'),
        startedAt: sfn.JsonPath.stringAt('$$.Execution.StartTime'),
        deadlineSec: sfn.JsonPath.numberAt('$.plan.deadlineSec'),
      }),
      // Invoked directly, as the workflow's other functions: the round's small result is `$.batch`.
      payloadResponseOnly: true,
      resultPath: '$.batch',
    });
    this.round.addRetry(BATCH_ROUND_RETRY);
    const wait = new sfn.Wait(this, 'Wait', { stateName: STATE_NAMES.waitForBatches, time: sfn.WaitTime.secondsPath('$.batch.waitSec') });
    const done = new sfn.Pass(this, 'Done', { stateName: STATE_NAMES.batchesDone });
    const choice = new sfn.Choice(this, 'Pending', { stateName: STATE_NAMES.batchesPending })
      .when(sfn.Condition.numberGreaterThan('$.batch.pendingBatches', 0), wait.next(this.round))
      .otherwise(done);
    this.round.next(choice);
    this.startState = this.round;
    this.endStates = [done];
  }
}
