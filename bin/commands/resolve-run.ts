/**
 * The run-defining flags (run-options.ts) read into a RunRequest, plain data that
 * app/resolve-run.ts turns into the run: one reading for `rcb run`, `rcb estimate` and
 * `rcb cloud run`, so the same flags give the same run id.
 */
import type { RunRequest } from '../../core/run/run-request';
import { resolveRun as resolveRequest, type RequestSources, type ResolvedRun } from '../../app/resolve-run';
import type { HostedModelResolver } from '../../app/models';
import { parseList, parseNumber, parsePositiveInt } from './common';
import { MAX_SAMPLES, MAX_TIMEOUT_SEC } from '../../core/limits';

export type { ResolvedRun };

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
  /** `rcb run --subset FILE`: only the subset's tasks. */
  subset?: string;
}

/** The flags' strings checked and read; errors name the flag. */
export function runRequestFromFlags(opts: RunSpecFlags): RunRequest {
  return {
    psetDir: opts.pset,
    models: opts.model,
    samples: parsePositiveInt('--samples', opts.samples, MAX_SAMPLES),
    temperature: opts.temperature !== undefined ? parseNumber('--temperature', opts.temperature) : undefined,
    withPaper: opts.paper,
    papers: parseList(opts.papers),
    timeoutSec: parseNumber('--timeout', opts.timeout, 1, MAX_TIMEOUT_SEC),
    promptTemplate: opts.promptTemplate,
    budgetUsd: opts.budget !== undefined ? parseNumber('--budget', opts.budget) : null,
    ...(opts.subset !== undefined ? { subsetFile: opts.subset } : {}),
  };
}

/** The run of the flags. */
export function resolveRun(opts: RunSpecFlags, hosted: HostedModelResolver | null, sources?: RequestSources): ResolvedRun {
  return resolveRequest(runRequestFromFlags(opts), hosted, sources);
}
