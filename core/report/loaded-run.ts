/**
 * A run as the result commands read it (show, compare, runs, the HTML report): its record,
 * tasks, verdicts and answers, read from the store once.
 */
import type { RunStore } from '../store';
import type { CompletionRecord, RunRecord, TaskRecord, Verdict } from '../records';

/** The tasks a run holds, with their answers and verdicts, read once from the store. */
export interface LoadedRun {
  run: RunRecord;
  tasks: TaskRecord[];
  verdicts: Map<string, Verdict>;
  completions: Map<string, CompletionRecord>;
  /** Task ids a cloud run recorded infra_error (`runs/<id>/infra-errors.json`); absent for a local run. */
  infraErrors?: ReadonlySet<string>;
}

export async function loadRun(store: RunStore, runId: string): Promise<LoadedRun> {
  const run = await store.getRun(runId);
  if (!run) throw new Error(`no run ${runId} in this store`);
  const tasks = await store.listTasks(runId);
  const verdicts = new Map((await store.listVerdicts(runId)).map((v) => [v.taskId, v]));
  const completions = await store.getCompletions(tasks.map((t) => t.taskId));
  return { run, tasks, verdicts, completions };
}
