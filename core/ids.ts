/**
 * Identity (ARCHITECTURE, Identity and idempotency): the same work always gets the same id,
 * so reruns, resumed runs and duplicate deliveries find finished results and do nothing.
 */
import { createHash } from 'node:crypto';
import type { RunSpec } from './records';

/** JSON with object keys sorted, so equal values always serialise the same. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface TaskIdentity {
  paperDigest: string;
  paper: string;
  file: string;
  snippet: string;
  model: string;
  modelParams: Record<string, unknown>;
  promptTemplateDigest: string;
  withPaper: boolean;
  sample: number;
}

export function taskId(t: TaskIdentity): string {
  return sha256(canonicalJson([t.paperDigest, t.paper, t.file, t.snippet, t.model, t.modelParams, t.promptTemplateDigest, t.withPaper, t.sample])).slice(0, 32);
}

/** A run's id follows everything that decides its tasks and verdicts; the budget is left out so it can be raised on resume. */
export function runId(spec: RunSpec): string {
  const { psetDigest, models, samples, withPaper, papers, promptTemplateDigest, timeoutSec } = spec;
  const identity = {
    psetDigest,
    models,
    samples,
    withPaper,
    papers: papers ? [...papers].sort() : null,
    promptTemplateDigest,
    timeoutSec,
    // Only when there is one, so that the ids of runs of every task stay as they were.
    ...(spec.subset ? { subset: spec.subset.sha256 } : {}),
  };
  return sha256(canonicalJson(identity)).slice(0, 16);
}

/** A readable folder name for a run: its models, then its id. */
export function runFolderName(spec: RunSpec, id: string): string {
  const models = spec.models
    .map((m) => m.id.replace(/[^A-Za-z0-9._-]+/g, '_'))
    .join('+')
    .slice(0, 60);
  return `${models}-${id.slice(0, 10)}`;
}
