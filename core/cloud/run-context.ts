/**
 * Everything a cloud worker needs of a run, loaded once per warm Lambda instance or
 * container: the run record, its plan manifest (tasks by id), the pset and the prompt
 * template. Tasks, pset and template never change after planning, so caching them is safe;
 * the run record's status and budget are read fresh where they matter.
 */
import type { Pset } from '../types';
import type { BlobStore, RunStore } from '../store';
import type { RunRecord, TaskRecord } from '../records';
import type { PromptTemplate } from '../prompt/template';
import { cloudKeys, parsePayload, planManifestSchema, type PlanManifest } from './payloads';
import { loadBundledPset, loadPromptTemplateBlob, RunInputError } from './pset-bundle';

export interface RunContext {
  run: RunRecord;
  manifest: PlanManifest;
  tasks: Map<string, TaskRecord>;
  pset: Pset;
  template: PromptTemplate;
}

export interface RunContextDeps {
  store: RunStore;
  blobs: BlobStore;
  /** Writable directory the pset is materialised in. */
  scratchDir: string;
}

export async function loadPlanManifest(blobs: BlobStore, runId: string): Promise<PlanManifest> {
  const body = await blobs.get(cloudKeys.planManifest(runId));
  if (!body) throw new RunInputError(`run ${runId} has no plan manifest (${cloudKeys.planManifest(runId)}): was it planned?`);
  return parsePayload(planManifestSchema, JSON.parse(body.toString('utf8')), `plan manifest of run ${runId}`);
}

export async function loadRunContext(deps: RunContextDeps, runId: string): Promise<RunContext> {
  const run = await deps.store.getRun(runId);
  if (!run) throw new RunInputError(`no run ${runId} in the run store`);
  const manifest = await loadPlanManifest(deps.blobs, runId);
  const [pset, template] = await Promise.all([
    loadBundledPset(deps.blobs, manifest.psetKey, deps.scratchDir, { psetDigest: run.spec.psetDigest, papers: run.spec.papers }),
    loadPromptTemplateBlob(deps.blobs, manifest.promptTemplateKey, run.spec.promptTemplateDigest),
  ]);
  return { run, manifest, tasks: new Map(manifest.tasks.map((t) => [t.taskId, t])), pset, template };
}

/** Run contexts by run id, loaded on first use; a failed load is not kept. */
export class RunContextCache {
  private readonly contexts = new Map<string, Promise<RunContext>>();
  constructor(private readonly deps: RunContextDeps) {}

  get(runId: string): Promise<RunContext> {
    let ctx = this.contexts.get(runId);
    if (!ctx) {
      ctx = loadRunContext(this.deps, runId);
      this.contexts.set(runId, ctx);
      ctx.catch(() => this.contexts.delete(runId));
    }
    return ctx;
  }
}
