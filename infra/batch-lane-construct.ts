import { Duration } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';

export interface BatchLaneConstructProps {
  /**
   * One round of the batch lane: generateBatches (core/run/generate-batch.ts) with `once`
   * for the run of `$.runId` (submit what fits, poll each pending batch once, ingest the
   * ended ones). Its payload answers `{ pendingBatches, open }`.
   */
  readonly batchRound: lambda.IFunction;
  /**
   * Pause between two rounds while a batch is pending: the state machine waits, no Lambda does.
   * @default Duration.minutes(5)
   */
  readonly pollInterval?: Duration;
  /**
   * Prefix of the state names, so that the fragment can sit in a workflow with others.
   * @default 'Batch'
   */
  readonly statePrefix?: string;
}

/**
 * The cloud batch lane, a state machine fragment: BatchRound, then a Choice that ends the
 * fragment when no batch is pending (every task answered, or nothing more can be sent:
 * the budget, too few requests for the provider's smallest batch) and otherwise waits and
 * polls again. Its end states leave the round's result at `$.batch`.
 *
 * What it needs from the orchestrator (not wired yet): run in a Parallel branch beside
 * WaitForGeneration after PlanRun; PlanRun must leave the tasks of batch-mode models out
 * of the SQS lanes; a `batchRound` function (a thin handler over generateBatches with the
 * DynamoDB run store, a DynamoDB BatchLedger, the provider keys of Secrets Manager and,
 * for Bedrock, its S3 location and role); CheckProgress then counts batch answers like
 * lane answers. The execution history stays bounded: three states per round, and a round
 * per pollInterval for at most the providers' 24 h window times the sweep's rounds.
 */
export class BatchLaneConstruct extends sfn.StateMachineFragment {
  public readonly startState: sfn.State;
  public readonly endStates: sfn.INextable[];
  public readonly round: tasks.LambdaInvoke;

  constructor(scope: Construct, id: string, props: BatchLaneConstructProps) {
    super(scope, id);
    const p = props.statePrefix ?? 'Batch';
    this.round = new tasks.LambdaInvoke(this, `${p}Round`, {
      lambdaFunction: props.batchRound,
      payload: sfn.TaskInput.fromObject({ runId: sfn.JsonPath.stringAt('$.runId') }),
      resultSelector: { 'pendingBatches.$': '$.Payload.pendingBatches', 'open.$': '$.Payload.open' },
      resultPath: '$.batch',
      retryOnServiceExceptions: true,
    });
    // A failed round (a provider that did not answer) is tried again after the pause: the
    // batches are in the ledger, nothing is lost or sent twice.
    this.round.addRetry({ errors: ['States.TaskFailed'], interval: Duration.seconds(30), maxAttempts: 3, backoffRate: 2 });
    const wait = new sfn.Wait(this, `WaitFor${p}es`, { time: sfn.WaitTime.duration(props.pollInterval ?? Duration.minutes(5)) });
    const done = new sfn.Pass(this, `${p}esDone`);
    const choice = new sfn.Choice(this, `${p}esPending?`)
      .when(sfn.Condition.numberGreaterThan('$.batch.pendingBatches', 0), wait.next(this.round))
      .otherwise(done);
    this.round.next(choice);
    this.startState = this.round;
    this.endStates = [done];
  }
}
