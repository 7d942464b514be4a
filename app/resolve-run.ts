/**
 * A run request (core/run/run-request.ts) resolved against this machine: its pset and
 * prompt template read, its models as clients, and its identity (spec and run id). One
 * resolution for `rcb run`, `rcb estimate`, `rcb cloud run` and sweeps, so the same request
 * gives the same run id everywhere.
 */
import type { RunSpec } from '../core/records';
import type { Pset } from '../core/types';
import type { PromptTemplate } from '../core/prompt/template';
import { requestedModels, runIdentity, type RunRequest } from '../core/run/run-request';
import { loadPromptTemplate, loadPsetOrFail } from './local-machine';
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
  const pset = loadPsetOrFail(request.psetDir, request.papers, sources.papers);
  const template = loadPromptTemplate(request.promptTemplate);
  const { temperature } = request;
  const models = resolveModels(requestedModels(request), pset, hosted, { temperature }, request.papers !== null, sources.models);
  const { spec, runId } = runIdentity(
    request,
    pset,
    template.digest,
    [...models.clients.values()].map((c) => ({ id: c.id, params: c.params })),
  );
  return { pset, template, models, spec, runId, samples: request.samples, temperature, budgetUsd: request.budgetUsd };
}
