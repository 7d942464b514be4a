/**
 * Partial is never final (docs/running-locally.md#partial-runs): a run that did not finish
 * (cancelled, interrupted, failed, out of budget, or still going) is scored over its judged
 * tasks only, and every output says so with its judged and pending counts. A task samples
 * without a verdict would otherwise count as failed under the strict judge, and a run of 20
 * judged tasks in 138 would read as a model's score.
 */
import type { RunRecord, RunStatus, TaskRecord, Verdict } from '../records';

/** The statuses of a run that has ended as it should. */
const FINISHED: ReadonlySet<ShownStatus> = new Set(['succeeded', 'succeeded_with_errors']);
/** The statuses of a run some process is still working on. */
export const ACTIVE: ReadonlySet<ShownStatus> = new Set(['planned', 'generating', 'evaluating', 'aggregating']);

/** What a reader sees as the run's status: an active run whose process is gone is `interrupted`. */
export type ShownStatus = RunStatus | 'interrupted';

/**
 * The status to show: `interrupted` for an active run whose owner is known to be gone
 * (`ownerAlive` false); as stored otherwise (unknown owner: as stored).
 */
export function shownStatus(status: RunStatus, ownerAlive: boolean | null): ShownStatus {
  return ACTIVE.has(status) && ownerAlive === false ? 'interrupted' : status;
}

export interface PartialRun {
  status: ShownStatus;
  /** Task samples with a verdict, and without one, of the tasks that can run (env_broken ones aside). */
  judged: number;
  pending: number;
}

/** The run's partial state, or null when it is final (finished, or nothing is left to judge). */
export function partialRun(run: RunRecord, tasks: TaskRecord[], verdicts: Map<string, Verdict>, status: ShownStatus = run.status): PartialRun | null {
  const broken = new Set((run.environment?.papers ?? []).filter((p) => !p.runs).map((p) => p.paper));
  const runnable = tasks.filter((t) => !broken.has(t.paper));
  const judged = runnable.filter((t) => verdicts.has(t.taskId)).length;
  const pending = runnable.length - judged;
  // A finished run's untested tasks are its result (the strict judge counts them failed, as docs/scoring.md says); one that did not finish has them still to come.
  return !FINISHED.has(status) && pending > 0 ? { status, judged, pending } : null;
}

/** The tasks of a partial run that its scores rest on: every sample of a task judged. */
export function judgedTasks(run: RunRecord, tasks: TaskRecord[], verdicts: Map<string, Verdict>, infraErrors?: ReadonlySet<string>): TaskRecord[] {
  const key = (t: TaskRecord) => `${t.model}\0${t.paper}\0${t.file}\0${t.snippet}`;
  // env_broken and infra_error samples stay: the score counts them apart, as in a finished run.
  const broken = new Set((run.environment?.papers ?? []).filter((p) => !p.runs).map((p) => p.paper));
  const open = new Set(tasks.filter((t) => !verdicts.has(t.taskId) && !infraErrors?.has(t.taskId) && !broken.has(t.paper)).map(key));
  return tasks.filter((t) => !open.has(key(t)));
}

/** The line every output of a partial run carries. */
export function partialNote(p: PartialRun): string {
  return `partial run (${p.status}): ${p.judged} of ${p.judged + p.pending} task sample(s) judged, ${p.pending} pending; scores are over the judged tasks only and are not final`;
}

/** CSV: a partial run's rows end with these (every row: they are the run's), absent for a final run. */
export const PARTIAL_CSV_COLUMNS = ['run_status', 'judged', 'pending'];

export function partialCsvCells(p: PartialRun | undefined): string[] {
  return p ? [`partial (${p.status})`, String(p.judged), String(p.pending)] : [];
}
