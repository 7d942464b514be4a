/**
 * What a user asks a run to be, as plain data (no flag parser's types): the CLI, a sweep file
 * and tests all build one, and the run's identity (its spec and id) is derived from it here
 * once, so the same request always names the same run wherever it comes from.
 */
import type { ModelSpec, RunSpec, RunSubset } from '../records';
import { runId as computeRunId } from '../ids';

export interface RunRequest {
  /** The pset folder. @default the bundled example */
  psetDir?: string;
  /** Model names: oracle, empty, replay:FILE or registry ids. @default ['oracle'] */
  models: string[];
  /** Completions per task. */
  samples: number;
  /** Sampling temperature over the registry's. @default the registry's */
  temperature?: number;
  /** Whether prompts carry the paper's text. */
  withPaper: boolean;
  /** Papers in scope, or null for all. */
  papers: string[] | null;
  /** Time limit of one test run, seconds. */
  timeoutSec: number;
  /** A shipped template's name or a template file. @default the original harness's */
  promptTemplate?: string;
  /** Hard cap on model spend, USD; null for none. */
  budgetUsd: number | null;
  /** A subset file (`rcb subset build`): only its tasks are run, and the run id follows it. */
  subsetFile?: string;
}

/** The run spec and run id of a request, once its pset, template and models are known. */
export function runIdentity(
  request: RunRequest,
  pset: { digest: string; root: string },
  promptTemplateDigest: string,
  models: ModelSpec[],
  subset?: RunSubset,
): { spec: RunSpec; runId: string } {
  const spec: RunSpec = {
    psetDigest: pset.digest,
    psetRoot: pset.root,
    models,
    samples: request.samples,
    withPaper: request.withPaper,
    papers: request.papers ? [...request.papers].sort() : null,
    promptTemplateDigest,
    timeoutSec: request.timeoutSec,
    budgetUsd: request.budgetUsd,
    ...(subset ? { subset } : {}),
  };
  return { spec, runId: computeRunId(spec) };
}

/** The models a request names, the default filled in. */
export function requestedModels(request: RunRequest): string[] {
  return request.models.length ? request.models : ['oracle'];
}
