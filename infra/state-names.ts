/**
 * State names of the run workflow. They are part of the contract: the local runner
 * executes this exact definition with aws-local-stepfunctions and binds Task states by name.
 * No CDK import, so the emulator can read them without loading aws-cdk-lib.
 */
export const STATE_NAMES = {
  planRun: 'PlanRun',
  /** Parallel: the SQS lanes' progress loop beside the batch lane. */
  generate: 'Generate',
  waitForGeneration: 'WaitForGeneration',
  checkProgress: 'CheckProgress',
  generationDone: 'GenerationDone?',
  lanesSettled: 'LanesSettled',
  batchLane: 'BatchLane?',
  noBatchLane: 'NoBatchLane',
  batchRound: 'BatchRound',
  batchesPending: 'BatchesPending?',
  waitForBatches: 'WaitForBatches',
  batchesDone: 'BatchesDone',
  evaluateShards: 'EvaluateShards',
  evaluateShard: 'EvaluateShard',
  evaluateShardOnDemand: 'EvaluateShardOnDemand',
  aggregate: 'Aggregate',
  markRunFailed: 'MarkRunFailed',
  succeeded: 'RunSucceeded',
  failed: 'RunFailed',
} as const;
