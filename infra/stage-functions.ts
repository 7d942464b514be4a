import type { Construct } from 'constructs';
import type { StageConstruct, StageTable } from '../app/stages/cloud-stage';
import { RcbFunction, type RcbFunctionProps } from './rcb-function';

/** What a construct sets on a stage's function besides the table's folder and description. */
export type StageFunctionSettings = Omit<RcbFunctionProps, 'functionDir' | 'description' | 'entry'>;

/**
 * One RcbFunction per stage of the table that `construct` owns, under the construct id its
 * entry names (so the logical ids stay those deployed), with the settings the construct
 * gives it by stage name. Returned by stage name.
 */
export function createStageFunctions(
  scope: Construct,
  stages: StageTable,
  construct: StageConstruct,
  settings: (stage: string) => StageFunctionSettings,
): Record<string, RcbFunction> {
  const out: Record<string, RcbFunction> = {};
  for (const [name, stage] of Object.entries(stages)) {
    const fn = stage.function;
    if (fn.construct !== construct) continue;
    out[name] = new RcbFunction(scope, fn.id, {
      functionDir: fn.dir,
      description: fn.description,
      ...(fn.entry ? { entry: fn.entry } : {}),
      ...settings(name),
    });
  }
  return out;
}

/** The function of a stage the construct cannot do without, naming the table's gap. */
export function requiredStageFunction(functions: Record<string, RcbFunction>, stage: string, construct: StageConstruct): RcbFunction {
  const fn = functions[stage];
  if (!fn) throw new Error(`the stage table has no ${stage} stage in the ${construct} construct (app/stages/index.ts)`);
  return fn;
}
