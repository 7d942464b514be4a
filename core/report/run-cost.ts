/**
 * What a run cost beside what it solved: per model and in total, the model spend (the cost
 * each answer recorded), the estimated infrastructure cost (core/cost/recorded-infra.ts:
 * $0 for a local run) and dollars per solved line. A solved line is a line of code of a
 * passing task sample, the weight scaled pass@1 gives it (SPEC 4 and 8): a task of N lines
 * passed in 2 of 3 samples counts 2N, under the report's judge and subset. The cost is the
 * whole run's (every task, whatever the subset). Every format renders these same figures.
 */
import type { CompletionRecord, TaskRecord } from '../records';
import type { ScoreReport } from '../scoring';
import type { InfraCost } from '../cost/recorded-infra';

export interface CostRow {
  /** The model id, or 'ALL' for the run's total. */
  model: string;
  modelUsd: number;
  infraUsd: number;
  totalUsd: number;
  solvedLines: number;
  /** Null when no line was solved. */
  usdPerSolvedLine: number | null;
}

export interface RunCost {
  where: 'local' | 'cloud';
  /** How the infrastructure figure was made. */
  basis: string;
  /** The infrastructure total had every shard run on demand (cloud runs). */
  infraOnDemandUsd: number;
  models: CostRow[];
  total: CostRow;
}

/** LoC of the passing task samples: a task of N lines passed in k samples counts kN. */
export function solvedLines(outcomes: Array<{ loc: number; samples: boolean[] }>): number {
  return outcomes.reduce((s, o) => s + o.loc * o.samples.filter(Boolean).length, 0);
}

export function costRow(model: string, modelUsd: number, infraUsd: number, solvedLines: number): CostRow {
  const totalUsd = modelUsd + infraUsd;
  return { model, modelUsd, infraUsd, totalUsd, solvedLines, usdPerSolvedLine: solvedLines > 0 ? totalUsd / solvedLines : null };
}

/** The run's cost figures for `report` (its judge and subset decide the solved lines). */
export function runCost(report: ScoreReport, tasks: TaskRecord[], completions: Map<string, CompletionRecord>, infra: InfraCost): RunCost {
  const spend = new Map<string, number>();
  for (const t of tasks) {
    const c = completions.get(t.taskId);
    if (c) spend.set(t.model, (spend.get(t.model) ?? 0) + c.costUsd);
  }
  const models = report.models.map((m) => {
    return costRow(m.model, spend.get(m.model) ?? 0, infra.byModel[m.model] ?? 0, solvedLines(m.outcomes));
  });
  const sum = (f: (r: CostRow) => number) => models.reduce((s, r) => s + f(r), 0);
  // The total infra is the run's, also what no scored model carries (none, unless a model was left out of the report).
  return {
    where: infra.where,
    basis: infra.basis,
    infraOnDemandUsd: infra.totalOnDemandUsd,
    models,
    total: costRow(
      'ALL',
      sum((r) => r.modelUsd),
      infra.totalUsd,
      sum((r) => r.solvedLines),
    ),
  };
}

/** Dollars as every format prints them: 4 decimals (a line can cost a fraction of a cent). */
export const usd4 = (x: number) => x.toFixed(4);
const perLine = (x: number | null) => (x === null ? 'n/a' : `$${usd4(x)}`);

export const COST_HEADER = ['model', 'model spend', 'infra (estimated)', 'total', 'lines solved', '$ per solved line'];

/** One row per model and the total, as the table and markdown print them. */
export function costRows(cost: RunCost): string[][] {
  return [...cost.models, cost.total].map((r) => [
    r.model,
    `$${usd4(r.modelUsd)}`,
    cost.where === 'local' ? 'local ($0)' : `$${usd4(r.infraUsd)}`,
    `$${usd4(r.totalUsd)}`,
    String(r.solvedLines),
    perLine(r.usdPerSolvedLine),
  ]);
}

export const COST_TITLE = 'cost (model spend recorded per answer; infrastructure estimated; a solved line is a LoC of a passing task sample)';

/** The columns the CSV adds on each model's ALL row, after all others. */
export const COST_CSV_COLUMNS = [
  'model_usd',
  'infra_usd',
  'total_usd',
  'solved_lines',
  'usd_per_solved_line',
  'infra_where',
  'run_total_usd',
  'run_usd_per_solved_line',
];

export function costCsvCells(cost: RunCost, model: string): string[] {
  const r = cost.models.find((m) => m.model === model);
  if (!r) return COST_CSV_COLUMNS.map(() => '');
  const per = (x: number | null) => (x === null ? '' : usd4(x));
  return [
    usd4(r.modelUsd),
    usd4(r.infraUsd),
    usd4(r.totalUsd),
    String(r.solvedLines),
    per(r.usdPerSolvedLine),
    cost.where,
    usd4(cost.total.totalUsd),
    per(cost.total.usdPerSolvedLine),
  ];
}

/** The JSON report's `cost` object: the figures unrounded. */
export function costJson(cost: RunCost): Record<string, unknown> {
  return { where: cost.where, basis: cost.basis, infraOnDemandUsd: cost.infraOnDemandUsd, total: cost.total, models: cost.models };
}
