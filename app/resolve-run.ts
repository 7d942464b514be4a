/**
 * A run request (core/run/run-request.ts) resolved against this machine: its pset and
 * prompt template read, its models as clients, and its identity (spec and run id). One
 * resolution for `rcb run`, `rcb estimate`, `rcb cloud run` and sweeps, so the same request
 * gives the same run id everywhere.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { RunSpec, RunSubset } from '../core/records';
import type { Pset } from '../core/types';
import type { PromptTemplate } from '../core/prompt/template';
import { requestedModels, runIdentity, type RunRequest } from '../core/run/run-request';
import { loadPromptTemplate, loadPsetOrFail, UsageError } from './local-machine';
import { assertSubsetTasksInPset, parseSubsetFile, restrictPsetToSubset, subsetSha256 } from '../core/subset/subset-file';
import { resolveModels, type HostedModelResolver, type ResolvedModels } from './models';

/** What a run request defines, shared by `rcb run` and `rcb cloud run` so that their run ids match. */
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

/** Where the request's names came from, for the errors about them: the flags, or a sweep file's keys. */
export interface RequestSources {
  models: string;
  papers: string;
}

export function resolveRun(
  request: RunRequest,
  hosted: HostedModelResolver | null,
  sources: RequestSources = { models: '--model', papers: '--papers' },
): ResolvedRun {
  const subset = request.subsetFile !== undefined ? readRunSubset(request.subsetFile) : undefined;
  // A subset names the papers it was made for: they are the run's unless --papers says otherwise
  // (and then the digest tells whether the subset still fits).
  const papers = request.papers ?? (subset ? subset.file.pset.papers : null);
  if (subset && request.papers === null) refuseSubsetOfAnotherPset(subset, request.psetDir);
  const full = loadPsetOrFail(request.psetDir, papers, sources.papers);
  let pset = full;
  if (subset) {
    try {
      assertSubsetTasksInPset(subset.file, full, subset.source);
    } catch (e) {
      throw new UsageError(`--subset ${(e as Error).message}`);
    }
    pset = restrictPsetToSubset(full, subset.file);
  }
  const template = loadPromptTemplate(request.promptTemplate);
  const { temperature } = request;
  // Replay files and the oracle are checked against the whole pset: a replay of every task fits a subset's run.
  const models = resolveModels(requestedModels(request), full, hosted, { temperature }, papers !== null, sources.models);
  const { spec, runId } = runIdentity(
    { ...request, papers },
    pset,
    template.digest,
    [...models.clients.values()].map((c) => ({ id: c.id, params: c.params })),
    subset,
  );
  return { pset, template, models, spec, runId, samples: request.samples, temperature, budgetUsd: request.budgetUsd };
}

/**
 * A subset whose papers the pset lacks was made for another pset: said once, naming the subset
 * and both digests, not as one unknown paper per line blamed on a --papers that was not given.
 */
function refuseSubsetOfAnotherPset(subset: RunSubset, psetDir: string | undefined): void {
  const whole = loadPsetOrFail(psetDir, null);
  const held = new Set(whole.papers.map((p) => p.meta.id));
  const lacking = subset.file.pset.papers.filter((p) => !held.has(p));
  if (!lacking.length) return;
  throw new UsageError(
    `--subset ${subset.source}: made for the pset with digest ${subset.file.pset.digest.slice(0, 12)}… (${subset.file.pset.papers.length} paper(s)), ` +
      `but the pset at ${whole.root} (digest ${whole.digest.slice(0, 12)}…) lacks ${lacking.length} of them: ${lacking.slice(0, 5).join(', ')}${lacking.length > 5 ? ', …' : ''}; ` +
      `build a subset for this pset with \`rcb subset build --pset ${whole.root}\``,
  );
}

/** `--subset FILE` read and checked; errors name the flag and the file. */
function readRunSubset(file: string): RunSubset {
  const source = resolve(file);
  if (!existsSync(source)) throw new UsageError(`--subset ${source} does not exist (it names a file written by \`rcb subset build\`)`);
  try {
    const parsed = parseSubsetFile(readFileSync(source, 'utf8'), source);
    return { sha256: subsetSha256(parsed), source, file: parsed };
  } catch (e) {
    throw new UsageError(`--subset ${(e as Error).message}`);
  }
}
