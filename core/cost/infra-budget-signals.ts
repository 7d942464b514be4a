/**
 * What the budget alarms watch (infra/monitoring-construct.ts): how much of its budget a
 * generating run has spent, and what it is on course to spend once every task is settled.
 * Pure arithmetic on the run record and its progress counts.
 */
import type { RunRecord } from '../records';

export interface BudgetSignals {
  /** Settled plus reserved spend, percent of the budget. */
  spentPercent: number;
  /**
   * Spend so far scaled to every task, percent of the budget; null until a tenth of the
   * tasks (and at least 10) are settled, when the rate says little yet.
   */
  projectedPercent: number | null;
}

/** Null for a run without a budget (nothing to alarm on). */
export function budgetSignals(run: Pick<RunRecord, 'spec' | 'spentUsd' | 'reservedUsd'>, progress: { total: number; settled: number }): BudgetSignals | null {
  const budget = run.spec.budgetUsd;
  if (budget === null || !(budget > 0)) return null;
  const spent = Math.max(0, run.spentUsd) + Math.max(0, run.reservedUsd);
  const spentPercent = (spent / budget) * 100;
  const enough = progress.settled >= Math.max(10, progress.total / 10);
  const projectedPercent = enough && progress.total > 0 ? (((run.spentUsd / progress.settled) * progress.total) / budget) * 100 : null;
  return { spentPercent: round2(spentPercent), projectedPercent: projectedPercent === null ? null : round2(projectedPercent) };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
