/**
 * The event a cloud run sends when it ends (Aggregate's final status, or MarkRunFailed's), so
 * that a team's EventBridge rule routes it to e-mail, chat or a pipeline, and the one-line
 * summary the stack's alarm topic receives (docs/cloud.md#run-events). The detail is read from
 * the run's own report.json, so its figures are the report's.
 */
import type { RunStatus } from '../records';
import type { ConfidenceInterval } from '../report/bootstrap';

/** The event's source and detail type: what a rule's event pattern matches. */
export const RUN_ENDED_EVENT = { source: 'rcb', detailType: 'rcb run ended' } as const;

/** One model's headline scores (strict judge, every task), as report.json states them. */
export interface RunEndedModel {
  model: string;
  /** Scaled pass@1, percent: the headline. */
  scaledPass1: number;
  scaledPass1Ci: ConfidenceInterval | null;
  pass1: number;
  pass1Ci: ConfidenceInterval | null;
  tasks: number;
}

/** The detail of a run-ended event. */
export interface RunEndedDetail {
  runId: string;
  /** The run's final status: succeeded, succeeded_with_errors, budget_exhausted, cancelled or failed. */
  status: RunStatus;
  /** The judge of the scores (strict, as the leaderboard). */
  judge: string;
  models: RunEndedModel[];
  spentUsd: number;
  budgetUsd: number | null;
  /** Bucket key of the run's report.json; null when the run failed before Aggregate wrote it. */
  reportKey: string | null;
  /** Why the run failed, when it did. */
  error?: string;
  /** A run that did not finish its work: its scores are over the judged tasks only, not final (docs/running-locally.md#partial-runs). */
  partial?: { status: string; judged: number; pending: number };
  /** One line for a human: what the alarm topic's subscribers read. */
  summary: string;
}

/** Where run-ended events go: EventBridge in AWS, a recording in the emulator and tests. */
export interface EventPublisher {
  /** Sends the event or throws. */
  publishRunEnded(detail: RunEndedDetail): Promise<void>;
}

const pct = (n: number) => n.toFixed(2);
const interval = (ci: ConfidenceInterval | null) => (ci ? ` [${pct(ci.low)}, ${pct(ci.high)}]` : '');

/** The one-line summary of a detail. */
export function runEndedSummary(d: Omit<RunEndedDetail, 'summary'>): string {
  const scores = d.models.map((m) => `${m.model} ${pct(m.scaledPass1)}${interval(m.scaledPass1Ci)}`).join(', ');
  const spend = `spend $${d.spentUsd.toFixed(4)}${d.budgetUsd !== null ? ` of $${d.budgetUsd.toFixed(2)}` : ''}`;
  return [
    `rcb run ${d.runId} ${d.status}`,
    scores
      ? `: scaled pass@1 % (${d.judge}${d.partial ? `, partial: over the ${d.partial.judged} judged of ${d.partial.judged + d.partial.pending}, not final` : ''}) ${scores}`
      : '',
    `; ${spend}`,
    d.error ? `; ${d.error.slice(0, 300)}` : '',
    d.reportKey ? `; report ${d.reportKey}` : '',
  ].join('');
}

interface ReportJson {
  run: { runId: string; spentUsd: number; spec: { budgetUsd: number | null } };
  judge: string;
  partial?: { status: string; judged: number; pending: number } | null;
  models: Array<{
    model: string;
    scaled: { mean: number; ci: ConfidenceInterval | null };
    pass1: { mean: number; ci: ConfidenceInterval | null };
    tasks: number;
  }>;
}

/** The detail of a run that Aggregate reported: its figures from the report.json text at `reportKey`. */
export function runEndedFromReport(reportJsonText: string, reportKey: string, status: RunStatus, error?: string): RunEndedDetail {
  const report = JSON.parse(reportJsonText) as ReportJson;
  const detail: Omit<RunEndedDetail, 'summary'> = {
    runId: report.run.runId,
    status,
    judge: report.judge,
    models: report.models.map((m) => ({
      model: m.model,
      scaledPass1: m.scaled.mean,
      scaledPass1Ci: m.scaled.ci,
      pass1: m.pass1.mean,
      pass1Ci: m.pass1.ci,
      tasks: m.tasks,
    })),
    spentUsd: report.run.spentUsd,
    budgetUsd: report.run.spec.budgetUsd,
    reportKey,
    ...(error ? { error } : {}),
    ...(report.partial ? { partial: report.partial } : {}),
  };
  return { ...detail, summary: runEndedSummary(detail) };
}

/** The detail of a run that failed before or during Aggregate: no scores, its spend and why. */
export function runFailedDetail(runId: string, spend: { spentUsd: number; budgetUsd: number | null }, error: string): RunEndedDetail {
  const detail: Omit<RunEndedDetail, 'summary'> = { runId, status: 'failed', judge: 'strict', models: [], ...spend, reportKey: null, error };
  return { ...detail, summary: runEndedSummary(detail) };
}

/**
 * Sends the event; a failure to send is returned, not thrown: the run's status is already
 * final, and the workflow's catch path must not turn a finished run into a failed one.
 */
export async function announceRunEnded(events: EventPublisher | undefined, detail: RunEndedDetail): Promise<string | undefined> {
  if (!events) return undefined;
  try {
    await events.publishRunEnded(detail);
    return undefined;
  } catch (e) {
    return `the run-ended event of run ${detail.runId} was not sent: ${(e as Error).message}`;
  }
}
