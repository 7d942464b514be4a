/**
 * The Lambda entry point of the batch-round stage, from its entry of the stage table (app/stages/index.ts).
 * It imports the entry from its own file, not from the table: esbuild would bundle every stage's dependencies.
 */
import { lambdaHandler } from '../../app/stages/cloud-stage';
import { batchRoundStage } from '../../app/stages/batch-round';

export const handler = lambdaHandler(batchRoundStage);
