/**
 * The rejudge use case: apply today's judge to a stored run's test runs, from the evidence
 * each verdict keeps, without running a test. A verdict without evidence (no test behind it,
 * or written before rcb kept evidence) is kept as it was judged.
 */
import type { RunStore } from './store';
import type { Verdict } from './records';
import { extractCompletion } from './prompt/extract';
import { rejudge } from './judge';

export interface RejudgeResult {
  /** Every verdict of the run, rejudged where its evidence allows. */
  verdicts: Verdict[];
  /** Verdicts judged again from their evidence. */
  rejudged: number;
  /** Of those, verdicts whose official or strict pass or failure class changed. */
  changed: number;
  /** Verdicts kept as stored: no test run behind them (generation errors, imports) or no evidence. */
  kept: number;
  /**
   * Answers without code that an older rcb failed without running their test; the official
   * judge now runs it (SPEC 6), which a rejudge cannot do. Counted within `kept`.
   */
  untestedNoCode: number;
}

export async function rejudgeRun(store: RunStore, runId: string): Promise<RejudgeResult> {
  const stored = await store.listVerdicts(runId);
  const completions = await store.getCompletions(stored.map((v) => v.taskId));
  const result: RejudgeResult = { verdicts: [], rejudged: 0, changed: 0, kept: 0, untestedNoCode: 0 };
  for (const v of stored) {
    const completion = completions.get(v.taskId);
    const again = completion && !completion.error ? rejudge(v, extractCompletion(completion.text)) : null;
    if (!again) {
      result.kept++;
      if (v.executor === 'none' && v.failureClass === 'no_code') result.untestedNoCode++;
      result.verdicts.push(v);
      continue;
    }
    result.rejudged++;
    if (again.officialPass !== v.officialPass || again.strictPass !== v.strictPass || again.failureClass !== v.failureClass) result.changed++;
    result.verdicts.push(again);
  }
  return result;
}

/**
 * A read-only view of a store whose run holds `verdicts` instead of the stored ones, so the
 * report use case scores rejudged verdicts exactly as it scores stored ones.
 */
export function withVerdicts(store: RunStore, verdicts: Verdict[]): RunStore {
  const refuse = () => Promise.reject(new Error('a rejudged run is read-only'));
  return {
    createRun: refuse,
    getRun: (id) => store.getRun(id),
    setRunStatus: refuse,
    setRunBudget: refuse,
    setRunEnvironment: refuse,
    putTasks: refuse,
    listTasks: (id) => store.listTasks(id),
    putCompletion: refuse,
    getCompletions: (ids) => store.getCompletions(ids),
    putVerdict: refuse,
    listVerdicts: async () => verdicts,
    getVerdicts: async (_runId, ids) => {
      const wanted = new Set(ids);
      return new Map(verdicts.filter((v) => wanted.has(v.taskId)).map((v) => [v.taskId, v]));
    },
    reserveBudget: refuse,
    settleBudget: refuse,
    clearReservations: refuse,
    claimGeneration: refuse,
    releaseGeneration: refuse,
    close: () => store.close(),
  };
}
