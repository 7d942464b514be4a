/**
 * The Lambda entry point of the dead-letter stage, from its entry of the stage table (app/stages/index.ts).
 * It imports the entry from its own file, not from the table: esbuild would bundle every stage's dependencies.
 */
import { lambdaHandler } from '../../app/stages/cloud-stage';
import { deadLetterStage } from '../../app/stages/dead-letter';

export const handler = lambdaHandler(deadLetterStage);
