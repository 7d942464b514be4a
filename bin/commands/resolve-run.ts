/**
 * Reading the run-defining flags (run-options.ts) into a run spec: one reading for
 * `rcb run`, `rcb estimate` and `rcb cloud run`, so the same flags give the same run id.
 */
import type { RunSpec } from '../../core/records';
import type { Pset } from '../../core/types';
import type { PromptTemplate } from '../../core/prompt/template';
import { runId as computeRunId } from '../../core/ids';
import { loadPromptTemplate, loadPsetOrFail, parseList, parseNumber, parsePositiveInt, UsageError } from './common';
import type { HostedModels } from '../../adapters/models/hosted-models';
import { batchProblem } from '../../adapters/models/registry';
import { resolveModels, type HostedModelResolver, type ResolvedModels } from './model-clients';

/** The values of the run-defining flags, as commander hands them over. */
export interface RunSpecFlags {
  pset?: string;
  model: string[];
  samples: string;
  temperature?: string;
  paper: boolean;
  papers?: string;
  timeout: string;
  promptTemplate?: string;
  budget?: string;
}

/** What the flags of a run define, shared by `rcb run` and `rcb cloud run` so that their run ids match. */
export interface ResolvedRun {
  pset: Pset;
  template: PromptTemplate;
  models: ResolvedModels;
  /** The run spec; `psetRoot` is the local pset folder (a cloud run replaces it with the bundle key). */
  spec: RunSpec;
  runId: string;
  samples: number;
  temperature?: number;
  budgetUsd: number | null;
}

export function resolveRun(opts: RunSpecFlags, hosted: HostedModelResolver | null): ResolvedRun {
  const papers = parseList(opts.papers);
  const pset = loadPsetOrFail(opts.pset, papers);
  const template = loadPromptTemplate(opts.promptTemplate);
  const samples = parsePositiveInt('--samples', opts.samples);
  const timeoutSec = parseNumber('--timeout', opts.timeout, 1);
  const temperature = opts.temperature !== undefined ? parseNumber('--temperature', opts.temperature) : undefined;
  const budgetUsd = opts.budget !== undefined ? parseNumber('--budget', opts.budget) : null;
  const models = resolveModels(opts.model.length ? opts.model : ['oracle'], pset, hosted, { temperature }, papers !== null);

  const spec: RunSpec = {
    psetDigest: pset.digest,
    psetRoot: pset.root,
    models: [...models.clients.values()].map((c) => ({ id: c.id, params: c.params })),
    samples,
    withPaper: opts.paper,
    papers: papers ? [...papers].sort() : null,
    promptTemplateDigest: template.digest,
    timeoutSec,
    budgetUsd,
  };
  return { pset, template, models, spec, runId: computeRunId(spec), samples, temperature, budgetUsd };
}

/**
 * The models `--batch` sends to their provider's batch API: every registry model of the run,
 * each of which must have one (offline and replay models have none). Shared by `rcb run` and
 * `rcb cloud run`.
 */
export function batchModelIds(resolved: ResolvedRun, hosted: HostedModels): string[] {
  const models = [...resolved.models.costs.keys()];
  if (!models.length) throw new UsageError('--batch needs a registry model (offline and replay models have no batch API)');
  const refused = models.filter((id) => !hosted.resolveBatch(id, { temperature: resolved.temperature }));
  if (refused.length) {
    throw new UsageError(`--batch: ${refused.map((id) => `${id}: ${batchProblem(hosted.entry(id)!) ?? 'cannot be batched'}`).join('; ')} (see \`rcb models\`)`);
  }
  return models;
}
