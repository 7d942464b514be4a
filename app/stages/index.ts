/**
 * The cloud run's stages, one typed entry each (app/stages/cloud-stage.ts). Infra creates a
 * function per entry and takes the workflow's Task state names from it, the stack alarms on
 * each, the emulator binds each with the entry's own dependency builders. A stage is added
 * here (docs: CONTRIBUTING.md "Add a cloud stage"); tests pass a table of their own, with the
 * shipped stages and theirs (test/e2e/stage-added.test.ts).
 *
 * A Lambda entry point (functions/<stage>/handler.ts) imports its entry from the stage's own
 * file, never from this table: esbuild would bundle every stage's dependencies into each
 * function (test/infra/entry-points.test.ts).
 */
import { aggregateStage } from './aggregate';
import { batchRoundStage } from './batch-round';
import { checkProgressStage } from './check-progress';
import type { CloudStage } from './cloud-stage';
import { deadLetterStage } from './dead-letter';
import { generateStage } from './generate';
import { markFailedStage } from './mark-failed';
import { planRunStage } from './plan-run';

export { aggregateStage, batchRoundStage, checkProgressStage, deadLetterStage, generateStage, markFailedStage, planRunStage };
export { lambdaHandler, queueConsumer, stateOf, type CloudStage, type LocalStageParts, type StageTable } from './cloud-stage';

/** The shipped stages' names: their function folders. */
export type StageName = 'generate' | 'dead-letter' | 'batch-round' | 'plan-run' | 'check-progress' | 'aggregate' | 'mark-failed';

/** Every cloud stage, in the order the stack lists their alarms. */
export const CLOUD_STAGES = {
  generate: generateStage,
  'dead-letter': deadLetterStage,
  'batch-round': batchRoundStage,
  'plan-run': planRunStage,
  'check-progress': checkProgressStage,
  aggregate: aggregateStage,
  'mark-failed': markFailedStage,
} satisfies Record<StageName, CloudStage>;
