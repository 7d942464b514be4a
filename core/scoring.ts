/**
 * Scores (SPEC 8) and the contamination-safe subsets (SPEC 9).
 */
import type { FailureClass, Judge, PaperMeta } from './types';
import type { PaperEnvironment, RunRecord, TaskRecord, Verdict } from './records';
import type { BootstrapMetric, BootstrapTask, ConfidenceInterval, TaskStatistic } from './report/bootstrap';
import { bootstrapIntervals, INTERVAL_METHOD, passRate } from './report/bootstrap';
import { judgedTasks, partialNote, partialRun, type PartialRun, type ShownStatus } from './report/partial-run';
import { cutoffFreeModels, inScope as scopeHolds, isSafeFor, normalizeCutoff, subsetScopes, type Subset } from './contamination';
import { caughtCheat } from './judge';

export type { Subset } from './contamination';

export interface MeanStd {
  mean: number;
  /** Population standard deviation over samples. */
  std: number;
  /** One rate per sample index, percent. */
  rates: number[];
  /** 95% bootstrap interval of the mean (method in `ScoreReport.interval`); null when no task is in scope. */
  ci: ConfidenceInterval | null;
}

export interface PassAtK {
  k: number;
  /** Task-weighted, percent. */
  tasks: number;
  /** LoC-weighted, percent. */
  loc: number;
  /** 95% bootstrap intervals of `tasks` and `loc`. */
  tasksCi: ConfidenceInterval | null;
  locCi: ConfidenceInterval | null;
}

export interface PaperScore {
  paper: string;
  scaled: MeanStd;
  pass1: MeanStd;
  tasks: number;
  loc: number;
}

/** One task (paper, file, snippet) of a model as the score saw it: what `rcb compare` pairs. */
export interface TaskOutcome {
  paper: string;
  file: string;
  snippet: string;
  loc: number;
  /** Pass per sample index under the judge; a sample with no verdict is false. */
  samples: boolean[];
  /** Failure classes of the failing samples ('untested' for one with no verdict). */
  classes: string[];
}

/** A paper whose oracle fails in the run's environment: its tasks are out of every score. */
export interface EnvBrokenPaper {
  paper: string;
  reason: string | null;
  /** Task samples of the paper in scope, over every model. */
  taskSamples: number;
}

export interface ModelScore {
  model: string;
  /** Scaled pass@1: LoC-weighted, the headline. */
  scaled: MeanStd;
  pass1: MeanStd;
  passAtK: PassAtK[];
  papers: PaperScore[];
  /** Distinct (paper, file, snippet) tasks in scope. */
  tasks: number;
  loc: number;
  samples: number;
  /** Failed task samples by class (of the chosen judge). */
  failures: Partial<Record<FailureClass, number>>;
  /**
   * Task samples that pass the original rule and fail the strict judge, by cheat class
   * (core/judge.ts caughtCheat), whichever judge the report uses: answers caught forging.
   */
  cheats: Record<string, number>;
  /**
   * Task samples with no verdict yet (unfinished run). The strict judge counts them as
   * failures; the official judge leaves their tasks out of the denominator, as the original
   * harness did (it skipped a snippet until every sample of it was tested).
   */
  pending: number;
  /** Task samples of papers that cannot run in the run's environment (env_broken): out of the scores. */
  envBroken: number;
  /** The same, per paper. */
  envBrokenByPaper: Record<string, number>;
  /**
   * Task samples recorded infra_error (the cloud shard that held them failed every attempt)
   * and still without a verdict: out of the scores, as env_broken ones are, and never model
   * failures. A task with such a sample is out as a whole (pass@k needs its n samples).
   */
  infraError: number;
  /** `infraError` over the model's task samples in scope (env_broken ones aside), percent. */
  infraErrorRate: number;
  /** Scored task samples whose verdict is flagged flaky_reference (the snippet's reference is flaky: `rcb doctor --repeat`); kept in the scores. */
  flaky: number;
  /** Papers in scope for this model. */
  paperIds: string[];
  /** Cutoff used for the subset, if any. */
  cutoff: string | null;
  /** Models whose unknown cutoff leaves this one without a contamination-safe score (empty when it has one). */
  cutoffUnknown: string[];
  /** The scored tasks themselves (not printed by the formats; `rcb compare` pairs them). */
  outcomes: TaskOutcome[];
}

export interface ScoreInput {
  tasks: TaskRecord[];
  verdicts: Map<string, Verdict>;
  papers: PaperMeta[];
  judge: Judge;
  subset: Subset;
  /** Knowledge cutoff month (YYYY-MM) per model, where known. */
  cutoffs: Record<string, string | undefined>;
  /** Every model of the run, listed even with no task to score (a partial run's model not judged yet: n/a); default the tasks' models. */
  models?: string[];
  /** Models no cutoff applies to (oracle, empty: no training data); every paper is safe for them. */
  cutoffFree?: string[];
  /** The run's environment check, if it had one: tasks of papers that do not run are env_broken. */
  environment?: PaperEnvironment[];
  /**
   * Task ids recorded infra_error (a cloud run's `infra-errors.json`): those still without a
   * verdict are out of the scores; one judged since (a restart evaluated it) counts as usual.
   */
  infraErrors?: ReadonlySet<string>;
}

export interface ScoreReport {
  judge: Judge;
  subset: Subset;
  /** The common cutoff used by safe-common, if any. */
  commonCutoff: string | null;
  /** How the `ci` intervals were computed. */
  interval: string;
  models: ModelScore[];
  /** Papers that cannot run in the run's environment and had tasks in scope: listed, never scored (not 0%). */
  envBroken: EnvBrokenPaper[];
  /** Task samples recorded infra_error over every model, and their share of the task samples in scope (env_broken aside), percent. */
  infraError: { taskSamples: number; rate: number };
  /** What a reader must know to read the scores: untested and env_broken tasks, and how they are treated. */
  notes: string[];
  /** Set when the run did not finish: its scores are over the judged tasks only (core/report/partial-run.ts). */
  partial?: PartialRun;
}

export function passed(v: Verdict | undefined, judge: Judge): boolean {
  return !!v && (judge === 'strict' ? v.strictPass : v.officialPass);
}

/** A paper is safe when its code was first public after the first day of the cutoff month (no cutoff: every paper counts). */
export function isSafe(paper: PaperMeta, cutoff: string | undefined | null): boolean {
  if (!cutoff) return true;
  return isSafeFor(paper, cutoff);
}

export function latestCutoff(cutoffs: (string | undefined)[]): string | null {
  const known = cutoffs
    .map(normalizeCutoff)
    .filter((c): c is string => !!c)
    .sort();
  return known.length ? known[known.length - 1] : null;
}

function meanStd(rates: number[], ci: ConfidenceInterval | null): MeanStd {
  if (!rates.length) return { mean: 0, std: 0, rates, ci: null };
  const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
  const variance = rates.reduce((a, r) => a + (r - mean) ** 2, 0) / rates.length;
  return { mean, std: Math.sqrt(variance), rates, ci };
}

/** 1 - C(n-c, k) / C(n, k), computed as a product to stay exact for large n. */
export function passAtK(n: number, c: number, k: number): number {
  if (n - c < k) return 1;
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** SPEC 8's pass@k of a scope: the unbiased per-task estimate, averaged over tasks and weighted by LoC, in percent. */
function passAtKOf(groups: TaskGroup[], samples: number, k: number): { tasks: number; loc: number } {
  let tasks = 0;
  let loc = 0;
  let totalLoc = 0;
  for (const g of groups) {
    const c = [...g.samples.values()].filter(Boolean).length;
    const p = passAtK(samples, c, k);
    tasks += p;
    loc += p * g.loc;
    totalLoc += g.loc;
  }
  return { tasks: groups.length ? (100 * tasks) / groups.length : 0, loc: totalLoc ? (100 * loc) / totalLoc : 0 };
}

interface TaskGroup {
  paper: string;
  file: string;
  snippet: string;
  loc: number;
  /** Pass per sample index; undefined = no verdict yet. */
  samples: Map<number, boolean | undefined>;
  classes: Set<string>;
}

/** The papers of a run that cannot run in its environment, with the reason (none when the check was skipped). */
export function envBrokenPapers(run: RunRecord): Map<string, string | null> {
  return new Map((run.environment?.papers ?? []).filter((p) => !p.runs).map((p) => [p.paper, p.reason]));
}

/** A run's tasks split into those that count (their paper runs here) and the env_broken ones. */
export function splitRunnable(run: RunRecord, tasks: TaskRecord[]): { runnable: TaskRecord[]; envBroken: TaskRecord[] } {
  const broken = envBrokenPapers(run);
  return { runnable: tasks.filter((t) => !broken.has(t.paper)), envBroken: tasks.filter((t) => broken.has(t.paper)) };
}

/**
 * The one way a stored run is scored, behind every output (report formats, HTML, `rcb runs`,
 * `rcb show`, `rcb compare`, cloud results): with the run's environment check (env_broken
 * papers out of the score, listed) and its models' knowledge cutoffs.
 */
export function scoreStoredRun(
  run: RunRecord,
  tasks: TaskRecord[],
  verdicts: Map<string, Verdict>,
  judge: Judge,
  subset: Subset,
  infraErrors?: ReadonlySet<string>,
  /** The status to show, where the caller knows more than the store (an active run whose process is gone: `interrupted`). */
  shown: ShownStatus = run.status,
): ScoreReport {
  const cutoffs = Object.fromEntries(Object.entries(run.models).map(([id, m]) => [id, m.knowledgeCutoff]));
  // A run that did not finish is scored over its judged tasks only, and says so.
  const partial = partialRun(run, infraErrors?.size ? tasks.filter((t) => !infraErrors.has(t.taskId)) : tasks, verdicts, shown);
  const report = scoreRun({
    tasks: partial ? judgedTasks(run, tasks, verdicts, infraErrors) : tasks,
    ...(partial ? { models: [...new Set(tasks.map((t) => t.model))] } : {}),
    verdicts,
    papers: run.papers,
    judge,
    subset,
    cutoffs,
    cutoffFree: cutoffFreeModels(run.models),
    environment: run.environment?.papers,
    ...(infraErrors ? { infraErrors } : {}),
  });
  if (partial) {
    report.partial = partial;
    report.notes.unshift(partialNote(partial));
  }
  return report;
}

export function scoreRun(input: ScoreInput): ScoreReport {
  const paperMeta = new Map(input.papers.map((p) => [p.id, p]));
  const models = [...new Set([...(input.models ?? []), ...input.tasks.map((t) => t.model)])];
  const scopes = subsetScopes(input.subset, models, input.cutoffs, new Set(input.cutoffFree ?? []));
  const commonCutoff = input.subset === 'safe-common' ? (scopes.get(models[0])?.cutoff ?? null) : null;
  const report: ScoreReport = {
    judge: input.judge,
    subset: input.subset,
    commonCutoff,
    interval: INTERVAL_METHOD,
    models: [],
    envBroken: [],
    infraError: { taskSamples: 0, rate: 0 },
    notes: [],
  };
  // infra_error: recorded so, and still unjudged (a later attempt that judged it wins).
  const isInfraError = (t: TaskRecord) => !!input.infraErrors?.has(t.taskId) && !input.verdicts.has(t.taskId);
  const groupKey = (t: TaskRecord) => `${t.model}\0${t.paper}\0${t.file}\0${t.snippet}`;
  const infraGroups = new Set(input.infraErrors?.size ? input.tasks.filter(isInfraError).map(groupKey) : []);
  let inScopeSamples = 0;
  const broken = new Map((input.environment ?? []).filter((p) => !p.runs).map((p) => [p.paper, p.reason]));
  const brokenSamples = new Map<string, number>();

  for (const model of models) {
    const scope = scopes.get(model)!;
    const cutoff = scope.cutoff;
    const inScope = (paper: string) => scopeHolds(scope, paperMeta.get(paper));
    const groups = new Map<string, TaskGroup>();
    const failures: Partial<Record<FailureClass, number>> = {};
    const cheats: Record<string, number> = {};
    let pending = 0;
    let envBroken = 0;
    const envBrokenByPaper: Record<string, number> = {};
    let infraError = 0;
    let modelSamples = 0;
    let flaky = 0;
    let samples = 0;
    for (const t of input.tasks) {
      if (t.model !== model || !inScope(t.paper)) continue;
      if (broken.has(t.paper)) {
        envBroken++;
        envBrokenByPaper[t.paper] = (envBrokenByPaper[t.paper] ?? 0) + 1;
        brokenSamples.set(t.paper, (brokenSamples.get(t.paper) ?? 0) + 1);
        continue;
      }
      modelSamples++;
      // A task with an infra_error sample is out of the score (its judged samples too): no
      // model failure is made of a shard the infrastructure lost.
      if (infraGroups.has(groupKey(t))) {
        if (isInfraError(t)) infraError++;
        continue;
      }
      const key = `${t.paper}\0${t.file}\0${t.snippet}`;
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { paper: t.paper, file: t.file, snippet: t.snippet, loc: t.loc, samples: new Map(), classes: new Set() }));
      const v = input.verdicts.get(t.taskId);
      g.samples.set(t.sample, v ? passed(v, input.judge) : undefined);
      if (!v) g.classes.add('untested');
      else if (!passed(v, input.judge)) g.classes.add(v.failureClass ?? 'integrity');
      samples = Math.max(samples, t.sample + 1);
      if (v?.flags?.includes(FLAKY_REFERENCE)) flaky++;
      const cheat = v ? caughtCheat(v) : null;
      if (cheat) cheats[cheat] = (cheats[cheat] ?? 0) + 1;
      if (!v) pending++;
      else if (!passed(v, input.judge)) {
        // An official failure carries its class; a task failing only the strict judge is 'integrity'.
        const cls: FailureClass = v.failureClass ?? 'integrity';
        failures[cls] = (failures[cls] ?? 0) + 1;
      }
    }
    // The official judge scores only fully tested tasks (the original harness's rule); the
    // strict one scores every task, an untested sample counting as a failure.
    const all = [...groups.values()].filter((g) => input.judge === 'strict' || ![...g.samples.values()].includes(undefined));
    // A sample without a verdict counts as failed in the interval, as it does in the rates.
    // The bootstrap task's weight is its LoC; task-weighted metrics weigh each task 1.
    const resampled = (tasks: TaskGroup[]): BootstrapTask[] =>
      tasks.map((g) => ({ weight: g.loc, cluster: g.paper, samples: Array.from({ length: samples }, (_, i) => g.samples.get(i) === true) }));
    const locWeighted = (stat: TaskStatistic): BootstrapMetric => ({ weight: (t) => t.weight, stat });
    const taskWeighted = (stat: TaskStatistic): BootstrapMetric => ({ weight: () => 1, stat });
    const rates = (tasks: TaskGroup[], weight: (g: TaskGroup) => number, ci: ConfidenceInterval | null) => {
      const total = tasks.reduce((a, g) => a + weight(g), 0);
      const out: number[] = [];
      for (let i = 0; i < samples; i++) {
        const ok = tasks.reduce((a, g) => a + (g.samples.get(i) ? weight(g) : 0), 0);
        out.push(total ? (100 * ok) / total : 0);
      }
      return meanStd(out, ci);
    };
    const byLoc = (g: TaskGroup) => g.loc;
    const byTask = () => 1;
    const paperIds = [...new Set(all.map((g) => g.paper))].sort();
    // The intervals (SPEC 8): task-weighted scores resample tasks; LoC-weighted ones (scaled
    // pass@1, LoC-weighted pass@k) resample papers, a paper's tasks sharing code. Each task keeps
    // its statistic from all its samples. One resampling per scheme serves all its metrics.
    const ks = Array.from({ length: samples }, (_, i) => i + 1);
    const atK =
      (k: number): TaskStatistic =>
      (n, c) =>
        passAtK(n, c, k);
    const scaled = rates(all, byLoc, null);
    const pass1 = rates(all, byTask, null);
    const kEstimates = ks.map((k) => passAtKOf(all, samples, k));
    const [pass1Ci, ...kTaskCis] = bootstrapIntervals(resampled(all), `${model}\0tasks`, [taskWeighted(passRate), ...ks.map((k) => taskWeighted(atK(k)))], {
      estimates: [pass1.mean, ...kEstimates.map((e) => e.tasks)],
    });
    const [scaledCi, ...kLocCis] = bootstrapIntervals(resampled(all), `${model}\0papers`, [locWeighted(passRate), ...ks.map((k) => locWeighted(atK(k)))], {
      clustered: true,
      estimates: [scaled.mean, ...kEstimates.map((e) => e.loc)],
    });
    const passAtKs: PassAtK[] = ks.map((k, i) => ({ k, ...kEstimates[i], tasksCi: kTaskCis[i], locCi: kLocCis[i] }));
    report.models.push({
      model,
      scaled: { ...scaled, ci: scaledCi },
      pass1: { ...pass1, ci: pass1Ci },
      passAtK: passAtKs,
      papers: paperIds.map((paper) => {
        const tasks = all.filter((g) => g.paper === paper);
        // Within one paper the tasks are what can be drawn again.
        const paperScaled = rates(tasks, byLoc, null);
        const paperPass1 = rates(tasks, byTask, null);
        const [paperScaledCi, paperPass1Ci] = bootstrapIntervals(resampled(tasks), `${model}\0${paper}`, [locWeighted(passRate), taskWeighted(passRate)], {
          estimates: [paperScaled.mean, paperPass1.mean],
        });
        return {
          paper,
          scaled: { ...paperScaled, ci: paperScaledCi },
          pass1: { ...paperPass1, ci: paperPass1Ci },
          tasks: tasks.length,
          loc: tasks.reduce((a, g) => a + g.loc, 0),
        };
      }),
      tasks: all.length,
      loc: all.reduce((a, g) => a + g.loc, 0),
      samples,
      failures,
      cheats,
      pending,
      envBroken,
      envBrokenByPaper,
      infraError,
      infraErrorRate: modelSamples ? (100 * infraError) / modelSamples : 0,
      flaky,
      paperIds,
      cutoff,
      cutoffUnknown: scope.unknown,
      outcomes: all.map((g) => ({
        paper: g.paper,
        file: g.file,
        snippet: g.snippet,
        loc: g.loc,
        samples: Array.from({ length: samples }, (_, i) => g.samples.get(i) === true),
        classes: [...g.classes].sort(),
      })),
    });
    inScopeSamples += modelSamples;
  }
  const infraSamples = report.models.reduce((a, m) => a + m.infraError, 0);
  report.infraError = { taskSamples: infraSamples, rate: inScopeSamples ? (100 * infraSamples) / inScopeSamples : 0 };
  report.envBroken = [...brokenSamples]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([paper, taskSamples]) => ({ paper, reason: broken.get(paper) ?? null, taskSamples }));
  report.models.sort((a, b) => b.scaled.mean - a.scaled.mean || a.model.localeCompare(b.model));
  report.notes = scoreNotes(report, flakySnippets(input));
  return report;
}

/** The verdict flag of a task whose snippet's reference solution is flaky (its verdict changed under `rcb doctor --repeat`). */
export const FLAKY_REFERENCE = 'flaky_reference';

/** `paper/file/snippet` of the snippets whose verdicts carry the flaky_reference flag. */
function flakySnippets(input: ScoreInput): string[] {
  const out = new Set<string>();
  for (const t of input.tasks) if (input.verdicts.get(t.taskId)?.flags?.includes(FLAKY_REFERENCE)) out.add(`${t.paper}/${t.file}/${t.snippet}`);
  return [...out].sort();
}

function scoreNotes(report: ScoreReport, flaky: string[]): string[] {
  const notes: string[] = [];
  const pending = report.models.filter((m) => m.pending > 0);
  if (pending.length) {
    const n = pending.reduce((a, m) => a + m.pending, 0);
    const treated =
      report.judge === 'official'
        ? 'this official-judge report leaves their tasks out of the denominator, as the original harness did; the strict judge counts them as failures'
        : 'this strict-judge report counts them as failures; the official judge leaves their tasks out of the denominator, as the original harness did';
    notes.push(`untested: ${n} task sample(s) have no verdict (${pending.map((m) => `${m.model} ${m.pending}`).join(', ')}): ${treated}`);
  }
  const brokenCount = report.models.reduce((a, m) => a + m.envBroken, 0);
  if (report.envBroken.length && brokenCount) {
    const papers = report.envBroken
      .map(({ paper, reason }) => [paper, reason] as const)
      .map(([paper, reason]) => `${paper} (${reason ?? 'its oracle fails here'})`)
      .join(', ');
    notes.push(
      `env_broken: ${brokenCount} task sample(s) of ${report.envBroken.length} paper(s) that cannot run in this environment (their oracle fails here) are kept out of the scores, not counted as model failures: ${papers}`,
    );
  }
  if (report.infraError.taskSamples) {
    const perModel = report.models.filter((m) => m.infraError > 0).map((m) => `${m.model} ${m.infraError} (${m.infraErrorRate.toFixed(2)}%)`);
    notes.push(
      `infra_error: ${report.infraError.taskSamples} task sample(s) (${report.infraError.rate.toFixed(2)}% infra error rate) whose evaluation shard failed every attempt are kept out of the scores, with the other samples of their tasks, not counted as model failures (${perModel.join(', ')}); start the run again to evaluate them`,
    );
  }
  const flakyCount = report.models.reduce((a, m) => a + m.flaky, 0);
  if (flakyCount) {
    notes.push(
      `flaky_reference: ${flakyCount} scored task sample(s) of ${flaky.length} snippet(s) whose reference solution's verdict changes from run to run (rcb doctor --repeat) are kept in the scores and flagged; their pass or fail is partly chance: ${flaky.join(', ')}`,
    );
  }
  return notes;
}
