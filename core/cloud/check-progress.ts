/**
 * CheckProgress: is generation over? It is when every task of the run has a completion
 * (an answer or a final failure), or when the run stopped generating (budget spent,
 * cancelled); evaluation then judges what there is.
 */
import type { BlobStore, RunStore } from '../store';
import type { CheckProgressResult } from './payloads';
import { RunInputError } from './pset-bundle';
import { DEFAULT_POLL_SCHEDULE, pollWaitSec, type PollSchedule } from './generation-polling';
import type { RunCounters } from './ports';
import { planWave, type WaveProgress } from './evaluation-waves';

export interface CheckProgressOptions {
  /** Longest generation may run, from the run's creation, before the run is failed; ms. */
  deadlineMs?: number;
  /** When the execution started (its deadline and pauses count from there). @default the run's creation */
  startedAt?: string;
  /**
   * Progress counters on the run item: while they say tasks are unsettled, the check reads
   * one item instead of every task and completion. @default none (always the items)
   */
  counters?: RunCounters;
  /** Pauses between checks. @default DEFAULT_POLL_SCHEDULE, stretched to the deadline (scheduleForDeadline) */
  schedule?: PollSchedule;
  /**
   * Pipelined evaluation (core/cloud/evaluation-waves.ts): the execution, and the waves its
   * loop has run. With it, the check also writes the next wave of ready shards, and `done`
   * means generation is over and every shard is in a wave. @default none: no waves
   */
  waves?: { blobs: BlobStore; execution: string; previous: WaveProgress };
  now?: () => Date;
}

/** Generation outlived its deadline: the run goes to the failure path. */
export class GenerationTimeoutError extends Error {
  constructor(runId: string, settled: number, total: number) {
    super(`run ${runId}: generation passed its deadline with ${total - settled} of ${total} task(s) unanswered`);
    this.name = 'GenerationTimeoutError';
  }
}

export async function checkProgress(store: RunStore, runId: string, options: CheckProgressOptions = {}): Promise<CheckProgressResult> {
  const run = await store.getRun(runId);
  if (!run) throw new RunInputError(`no run ${runId} in the run store`);
  const ageMs = (options.now ?? (() => new Date()))().getTime() - Date.parse(options.startedAt ?? run.createdAt);
  const schedule = scheduleForDeadline(options.deadlineMs === undefined ? undefined : options.deadlineMs / 1000, options.schedule);
  const waitSec = pollWaitSec(Math.max(0, ageMs) / 1000, schedule);
  const stopped = run.status === 'budget_exhausted' || run.status === 'cancelled';
  const counts = options.counters && !stopped ? await options.counters.getCounts(runId) : null;
  const pastDeadline = options.deadlineMs !== undefined && ageMs > options.deadlineMs;
  let generation: Omit<CheckProgressResult, 'waitSec' | 'waves' | 'wave'>;
  // Counters never run ahead of the items by more than duplicates; complete or late, the items decide.
  if (counts && counts.settled < counts.total && !pastDeadline) {
    generation = { done: false, total: counts.total, settled: counts.settled, failed: Math.min(counts.failed, counts.settled) };
  } else {
    const tasks = await store.listTasks(runId);
    const completions = await store.getCompletions(tasks.map((t) => t.taskId));
    const settled = completions.size;
    const failed = [...completions.values()].filter((c) => c.error).length;
    const done = settled === tasks.length || stopped;
    if (!done && pastDeadline) throw new GenerationTimeoutError(runId, settled, tasks.length);
    // Evaluation is next; a stopped run keeps the status that says why.
    if (done && (run.status === 'planned' || run.status === 'generating')) await store.setRunStatus(runId, 'evaluating');
    generation = { done, total: tasks.length, settled, failed };
  }
  if (!options.waves) return { ...generation, waitSec };
  const { blobs, execution, previous } = options.waves;
  const plan = await planWave({ store, blobs }, { runId, execution, previous, generationDone: generation.done });
  return {
    ...generation,
    // Over only when generation is and every shard has been in a wave (the last one included).
    done: generation.done && plan.undispatched === 0 && !plan.wave,
    // The pause after the last wave is the shortest: nothing is left to wait for but the check.
    waitSec: generation.done && plan.wave ? schedule.minSec : waitSec,
    waves: plan.waves,
    ...(plan.wave ? { wave: plan.wave } : {}),
  };
}

/**
 * The poll schedule of a run whose deadline is `deadlineSec`: the base schedule, its longest
 * pause stretched in proportion past a 24 h deadline, so that the checks (and so the waves)
 * of a 48 h run are no more than those of a 24 h one (test/infra/history-bound.test.ts).
 */
export function scheduleForDeadline(deadlineSec: number | undefined, base: PollSchedule = DEFAULT_POLL_SCHEDULE): PollSchedule {
  if (deadlineSec === undefined || deadlineSec <= BASE_DEADLINE_SEC) return base;
  return { minSec: base.minSec, maxSec: Math.ceil((base.maxSec * deadlineSec) / BASE_DEADLINE_SEC) };
}

/** The deadline the base poll schedules are sized for (the stack's default, 24 h). */
export const BASE_DEADLINE_SEC = 24 * 3600;
