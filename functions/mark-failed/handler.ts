/**
 * The Lambda entry point of the mark-failed stage, from its entry of the stage table (app/stages/index.ts).
 * It imports the entry from its own file, not from the table: esbuild would bundle every stage's dependencies.
 */
import { lambdaHandler } from '../../app/stages/cloud-stage';
import { markFailedStage } from '../../app/stages/mark-failed';

export const handler = lambdaHandler(markFailedStage);
