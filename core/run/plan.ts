/**
 * Planning: a run spec and a pset become the run's tasks (snippets x models x samples).
 */
import type { Pset } from '../types';
import type { RunStore } from '../store';
import type { ModelInfo, RunRecord, RunSpec, TaskRecord } from '../records';
import { taskId } from '../ids';

export function planTasks(pset: Pset, spec: Pick<RunSpec, 'models' | 'samples' | 'withPaper' | 'promptTemplateDigest' | 'subset'>): TaskRecord[] {
  const tasks: TaskRecord[] = [];
  // A run on a calibrated subset (RunSpec.subset) plans only the subset's tasks.
  const inSubset = spec.subset ? new Set(spec.subset.file.tasks.map((t) => `${t.paper}\n${t.snippet}`)) : null;
  // Model-major, then paper: a paper's tasks sit together so that a provider's prompt cache
  // for the shared prefix (instructions + paper) is reused while it is warm.
  for (const model of spec.models) {
    for (const paper of pset.papers) {
      for (const snippet of paper.snippets) {
        if (inSubset && !inSubset.has(`${paper.meta.id}\n${snippet.name}`)) continue;
        for (let sample = 0; sample < spec.samples; sample++) {
          tasks.push({
            taskId: taskId({
              paperDigest: paper.digest,
              paper: paper.meta.id,
              file: snippet.file,
              snippet: snippet.name,
              model: model.id,
              modelParams: model.params,
              promptTemplateDigest: spec.promptTemplateDigest,
              withPaper: spec.withPaper,
              sample,
            }),
            paper: paper.meta.id,
            file: snippet.file,
            snippet: snippet.name,
            loc: snippet.loc,
            model: model.id,
            sample,
          });
        }
      }
    }
  }
  return tasks;
}

/**
 * Create the run if it is new, or find it; a resumed run takes the budget of the spec it
 * is resumed with (raising the budget is how a budget_exhausted run goes on).
 */
export async function openRun(
  store: RunStore,
  input: { runId: string; spec: RunSpec; pset: Pset; models: Record<string, ModelInfo> },
  now: () => Date = () => new Date(),
): Promise<RunRecord> {
  const stamp = now().toISOString();
  const existing = await store.createRun({
    runId: input.runId,
    spec: input.spec,
    source: 'rcb',
    papers: input.pset.papers.map((p) => p.meta),
    models: input.models,
    status: 'planned',
    createdAt: stamp,
    updatedAt: stamp,
    spentUsd: 0,
    reservedUsd: 0,
  });
  if (existing.spec.budgetUsd === input.spec.budgetUsd) return existing;
  await store.setRunBudget(input.runId, input.spec.budgetUsd);
  return (await store.getRun(input.runId))!;
}
