import { CLOUD_STAGES, type StageName } from '../app/stages';

/** The Task state of a shipped stage, as its entry of the stage table (app/stages/index.ts) names it. */
function stageState(name: StageName): string {
  const { trigger } = CLOUD_STAGES[name];
  if (!('state' in trigger)) throw new Error(`stage ${name} is invoked by no workflow state`);
  return trigger.state;
}

/**
 * State names of the run workflow. They are part of the contract: the local runner
 * executes this exact definition with aws-local-stepfunctions and binds Task states by name.
 * A stage's Task state is named by its entry of the stage table. No CDK import, so the
 * emulator can read them without loading aws-cdk-lib.
 */
export const STATE_NAMES = {
  planRun: stageState('plan-run'),
  /** Parallel: the SQS lanes' progress loop beside the batch lane. */
  generate: 'Generate',
  /** Pass: the loop's state before its first check (no wave dispatched yet). */
  startWaves: 'StartWaves',
  waitForGeneration: 'WaitForGeneration',
  checkProgress: stageState('check-progress'),
  generationDone: 'GenerationDone?',
  lanesSettled: 'LanesSettled',
  batchLane: 'BatchLane?',
  noBatchLane: 'NoBatchLane',
  batchRound: stageState('batch-round'),
  batchesPending: 'BatchesPending?',
  waitForBatches: 'WaitForBatches',
  batchesDone: 'BatchesDone',
  /** Distributed Map over one wave of ready shards, inside the progress loop (pipelined evaluation). */
  evaluateShards: 'EvaluateShards',
  evaluateShard: 'EvaluateShard',
  evaluateShardOnDemand: 'EvaluateShardOnDemand',
  /** Fail state of a shard's child execution once Spot and on-demand both gave up: the shard's tasks become infra_error. */
  shardFailed: 'ShardFailed',
  aggregate: stageState('aggregate'),
  markRunFailed: stageState('mark-failed'),
  succeeded: 'RunSucceeded',
  failed: 'RunFailed',
} as const;

/**
 * Errors of a Lambda task state that a retry can clear: throttling and the service's own
 * transient failures (Step Functions' "Handle transient Lambda service exceptions"). Every
 * Lambda task state of the run workflow retries them (infra/lambda-retry.ts).
 */
export const LAMBDA_TRANSIENT_ERRORS = [
  'Lambda.TooManyRequestsException',
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.ClientExecutionTimeoutException',
] as const;

/**
 * Most iterations a Map runs at once, by kind: an inline Map runs at most 40 at a time (more
 * are queued), a Distributed Map's child executions at most 10,000 (Step Functions quotas).
 */
export const MAP_MAX_CONCURRENCY = { inline: 40, distributed: 10_000 } as const;

/** Where the evaluation Map's ResultWriter puts each Map Run's results (under the runs/ prefix the functions may read). */
export const MAP_RESULTS_PREFIX = 'runs/_map-runs';
