/**
 * `rcb sweep plan|run|status|report FILE`: a sweep file (core/sweep/sweep-file.ts) read into
 * one run spec, whose models are registry entries with the sweep's parameters applied. The
 * sweep's directory lists its runs in sweep.json (a changed file is a new run; answers
 * already bought are reused by task id), each run in a directory of its own below it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unknownName } from '../../core/util/did-you-mean';
import { formatSweepProblems, readSweepText, type Sweep, type SweepModel, type SweepProblem, type SweepReading } from '../../core/sweep/sweep-file';
import { runFolderName } from '../../core/ids';
import { buildReport } from '../../core/report/build-report';
import { budgetAccountId } from '../../core/run/budget';
import { HostedModels } from '../../adapters/models/hosted-models';
import { batchProblem, parseModelEntry, type RegistryError, type ModelEntry } from '../../adapters/models/registry';
import { estimateModel, type ModelEstimate } from '../../adapters/models/estimate';
import { providerModule } from '../../adapters/models/providers';
import { envKeySource } from '../../core/keys';
import { openRunDir, parseReportFlags, UsageError } from './common';
import { loadEntries } from '../../app/models';
import { formatInfraEstimate, promptGroups } from '../../app/estimate';
import { resolveRun, type ResolvedRun, type RunSpecFlags } from './resolve-run';

/** A sweep file read and resolved: its models as registry entries, its run. */
export interface LoadedSweep {
  sweep: Sweep;
  /** The sweep's models by name (entries with the sweep's parameters); offline models have none. */
  entries: Map<string, ModelEntry>;
  hosted: HostedModels;
  run: ResolvedRun;
  /** The screening stage's run (every model on the subset's tasks), if the sweep has one. */
  screen: ResolvedRun | null;
}

export function readSweep(file: string): Sweep {
  const reading = readSweepFile(file);
  if (reading.problems.length || !reading.sweep) throw sweepProblems(reading.file, reading.problems);
  return reading.sweep;
}

function readSweepFile(file: string): SweepReading {
  if (!existsSync(file)) throw new UsageError(`sweep file ${file} does not exist`);
  return readSweepText(file, readFileSync(file, 'utf8'));
}

function sweepProblems(file: string, problems: SweepProblem[]): UsageError {
  return new UsageError(`${formatSweepProblems(file, problems).join('\n')}\n${problems.length} problem(s) in the sweep file`);
}

const OFFLINE = new Set(['oracle', 'empty']);

/** The sweep's models as registry entries, and every problem of theirs (unknown ids, parameters, batch). */
function sweepEntries(models: SweepModel[], registry: ModelEntry[]): { entries: Map<string, ModelEntry>; problems: SweepProblem[] } {
  const entries = new Map<string, ModelEntry>();
  const problems: SweepProblem[] = [];
  const add = (m: SweepModel, message: string) => problems.push({ line: m.line, message: `model "${m.name}": ${message}` });
  for (const m of models) {
    if (OFFLINE.has(m.id)) {
      if (Object.keys(m.params).length || m.mode === 'batch' || m.budgetUsd !== null || m.name !== m.id)
        add(m, 'offline models take no params, name, mode batch or budget');
      continue;
    }
    const base = registry.find((r) => r.id === m.id);
    if (!base) {
      // The names a sweep's id takes: the registry's and the offline models.
      add(m, unknownName('id', 'model', m.id, [...registry.map((r) => r.id), ...OFFLINE], 'in the model registry', 200));
      continue;
    }
    let entry: ModelEntry;
    try {
      entry = parseModelEntry({ ...base, id: m.name, params: { ...base.params, ...m.params } }, 'params');
    } catch (e) {
      // The registry's message names the path (params.…) itself: no second "params:" before it.
      add(m, (e as RegistryError).message.replace(/^params: (?=params\b)/, ''));
      continue;
    }
    const cannotBatch = m.mode === 'batch' ? batchProblem(entry) : undefined;
    if (cannotBatch) add(m, `mode batch needs a provider with a batch API and batch prices in the registry: ${cannotBatch}`);
    entries.set(m.name, entry);
  }
  return { entries, problems };
}

export function loadSweep(file: string, keys = envKeySource()): LoadedSweep {
  // One pass: the file's own problems and its models' against the registry, reported together.
  const reading = readSweepFile(file);
  const registry = loadEntries(reading.modelsFile ?? undefined);
  const { entries, problems } = sweepEntries(reading.models, registry);
  const all = [...reading.problems, ...problems];
  if (all.length || !reading.sweep) throw sweepProblems(reading.file, all);
  const sweep = reading.sweep;
  // The sweep's entries over the registry's, so that a name equal to a registry id takes the sweep's parameters.
  const hosted = new HostedModels([...registry.filter((e) => !entries.has(e.id)), ...entries.values()], keys);
  const sources = { models: `${sweep.file}: models`, papers: `${sweep.file}: papers` };
  const run = resolveRun(sweepRunFlags(sweep), hosted, sources);
  let screen: ResolvedRun | null = null;
  if (sweep.screening) {
    try {
      screen = resolveRun({ ...sweepRunFlags(sweep), subset: sweep.screening.subset }, hosted, sources);
    } catch (e) {
      throw new UsageError(`${sweep.file}:${sweep.screening.line}: screening.subset ${(e as Error).message.replace(/^--subset /, '')}`);
    }
  }
  return { sweep, entries, hosted, run, screen };
}

export function modelBudgetsOf(sweep: Sweep): Record<string, number> {
  return Object.fromEntries(sweep.models.filter((m) => m.budgetUsd !== null).map((m) => [m.name, m.budgetUsd as number]));
}

// ---- plan ----

const usd = (x: number) => `$${x.toFixed(x < 1 ? 4 : 2)}`;

export interface SweepPlanRow {
  model: string;
  mode: 'interactive' | 'batch';
  estimate: ModelEstimate | null;
  budgetUsd: number | null;
}

/** Per model and in total: calls, tokens, expected and worst-case cost in both modes, the time batch mode may take. */
export function planSweep(loaded: LoadedSweep): { rows: SweepPlanRow[]; text: string } {
  if (loaded.screen) return planScreening(loaded, loaded.screen);
  return planStage(loaded, loaded.run);
}

function planStage(loaded: LoadedSweep, run: ResolvedRun): { rows: SweepPlanRow[]; text: string } {
  const { sweep, entries } = loaded;
  const groups = promptGroups(run.pset, run.template, sweep.withPaper, sweep.samples);
  const rows: SweepPlanRow[] = sweep.models.map((m) => {
    const entry = entries.get(m.name);
    return { model: m.name, mode: m.mode, estimate: entry ? estimateModel(entry, groups) : null, budgetUsd: m.budgetUsd };
  });
  const header = [
    'model',
    'mode',
    'calls',
    'input tokens',
    'output tokens',
    'interactive expected',
    'interactive worst',
    'batch expected',
    'batch worst',
    'budget',
  ];
  const cells = rows.map((r) => {
    const e = r.estimate;
    const calls = e ? e.calls : run.pset.papers.reduce((a, p) => a + p.snippets.length, 0) * sweep.samples;
    return [
      r.model,
      r.mode,
      String(calls),
      e ? String(e.inputTokens) : '0',
      e ? String(e.outputTokens) : '0',
      e ? usd(e.usd) : '$0 (offline)',
      e ? usd(e.worstCaseUsd) : '-',
      e?.batch ? usd(e.batch.usd) : '-',
      e?.batch ? usd(e.batch.worstCaseUsd) : '-',
      r.budgetUsd === null ? '-' : usd(r.budgetUsd),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) =>
    c
      .map((x, i) => x.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  const chosen = (r: SweepPlanRow, worst: boolean) => {
    const e = r.estimate;
    if (!e) return 0;
    if (r.mode === 'batch' && e.batch) return worst ? e.batch.worstCaseUsd : e.batch.usd;
    return worst ? e.worstCaseUsd : e.usd;
  };
  const sum = (f: (r: SweepPlanRow) => number) => rows.reduce((a, r) => a + f(r), 0);
  const out = [line(header), ...cells.map(line), ''];
  out.push(
    `calls ${sum((r) => r.estimate?.calls ?? 0)} paid; input tokens ${sum((r) => r.estimate?.inputTokens ?? 0)}; output tokens ${sum((r) => r.estimate?.outputTokens ?? 0)} (assumed per call, see rcb estimate)`,
  );
  out.push(`as planned (each model in its mode): expected ${usd(sum((r) => chosen(r, false)))}, worst case ${usd(sum((r) => chosen(r, true)))}`);
  out.push(`all interactive: expected ${usd(sum((r) => r.estimate?.usd ?? 0))}, worst case ${usd(sum((r) => r.estimate?.worstCaseUsd ?? 0))}`);
  const batchable = rows.filter((r) => r.estimate?.batch);
  if (batchable.length) {
    const batchOr = (r: SweepPlanRow, worst: boolean) =>
      r.estimate?.batch ? (worst ? r.estimate.batch.worstCaseUsd : r.estimate.batch.usd) : worst ? (r.estimate?.worstCaseUsd ?? 0) : (r.estimate?.usd ?? 0);
    out.push(`every batchable model in batch mode: expected ${usd(sum((r) => batchOr(r, false)))}, worst case ${usd(sum((r) => batchOr(r, true)))}`);
  }
  const batchModels = rows.filter((r) => r.mode === 'batch');
  if (batchModels.length) {
    const hours = Math.max(...batchModels.map((r) => providerModule(entries.get(r.model)!.provider).batchWindowHours ?? 24));
    const rounds = sweep.batch.maxRounds;
    out.push(
      `batch mode time: each batch ends within its provider's window (${hours} h; most end within an hour); requests that expire or fail go into the next batch, ` +
        `up to ${rounds} round(s)${sweep.batch.retryInteractively ? ' (or interactively: retry_interactively is on)' : ''}, so at most ${hours * rounds} h`,
    );
  }
  if (sweep.budgetUsd !== null) {
    const expected = sum((r) => chosen(r, false));
    const worst = sum((r) => chosen(r, true));
    out.push(
      expected > sweep.budgetUsd
        ? `budget ${usd(sweep.budgetUsd)}: below the expected cost; the sweep will stop budget_exhausted before finishing`
        : `budget ${usd(sweep.budgetUsd)}: ${worst <= sweep.budgetUsd ? 'covers even the worst case' : 'covers the expected cost; the worst case would exceed it'}`,
    );
  } else out.push('no budget_usd: spend is recorded but not capped');
  for (const r of rows) {
    if (r.budgetUsd !== null && chosen(r, false) > r.budgetUsd)
      out.push(`${r.model}: its budget ${usd(r.budgetUsd)} is below its expected cost ${usd(chosen(r, false))}; its tasks will stop unfinished`);
  }
  const infra = formatInfraEstimate(
    run.pset,
    rows.map((r) => ({ provider: entries.get(r.model)?.provider ?? null, batched: r.mode === 'batch', callSec: entries.get(r.model)?.call_sec })),
    sweep.samples,
  );
  return { rows, text: `${out.join('\n')}\n\nin the cloud (rcb cloud run, one run of every model):\n${infra}` };
}

/** What a model costs as planned (its mode), expected or at worst; offline models nothing. */
function chosenCost(r: SweepPlanRow, worst: boolean): number {
  const e = r.estimate;
  if (!e) return 0;
  if (r.mode === 'batch' && e.batch) return worst ? e.batch.worstCaseUsd : e.batch.usd;
  return worst ? e.worstCaseUsd : e.usd;
}

/**
 * A sweep with a screening stage: stage 1 (every model on the subset) in full, stage 2 (the
 * full set for the models kept, the subset's answers reused by task id) at its most, and the
 * same sweep without screening for comparison.
 */
function planScreening(loaded: LoadedSweep, screen: ResolvedRun): { rows: SweepPlanRow[]; text: string } {
  const { sweep } = loaded;
  const screening = sweep.screening!;
  const stage1 = planStage(loaded, screen);
  const full = planStage(loaded, loaded.run);
  const subsetTasks = screen.pset.papers.reduce((a, p) => a + p.snippets.length, 0);
  const fullTasks = loaded.run.pset.papers.reduce((a, p) => a + p.snippets.length, 0);
  // Stage 2 per model: the full set's cost less the subset's, whose answers it reuses.
  const rest = full.rows.map((r, i) => ({
    model: r.model,
    expected: Math.max(0, chosenCost(r, false) - chosenCost(stage1.rows[i], false)),
    worst: Math.max(0, chosenCost(r, true) - chosenCost(stage1.rows[i], true)),
  }));
  const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);
  const keptAtMost = screening.top !== null ? Math.min(screening.top, rest.length) : rest.length;
  // The most stage 2 can cost: the `top` dearest models, or every model when a threshold decides.
  const dearest = (worst: boolean) =>
    sum(
      rest
        .map((r) => (worst ? r.worst : r.expected))
        .sort((a, b) => b - a)
        .slice(0, keptAtMost),
    );
  const s1 = { expected: sum(stage1.rows.map((r) => chosenCost(r, false))), worst: sum(stage1.rows.map((r) => chosenCost(r, true))) };
  const s2 = { expected: dearest(false), worst: dearest(true) };
  const f = { expected: sum(full.rows.map((r) => chosenCost(r, false))), worst: sum(full.rows.map((r) => chosenCost(r, true))) };
  const rule = screening.threshold !== null ? `whose estimated interval reaches ${screening.threshold} points` : `the ${screening.top} best estimates`;
  const perModel = (kept: number) => (rest.length ? (sum(rest.map((r) => r.expected)) / rest.length) * kept : 0);
  const out = [
    `stage 1, screening: every model on the ${subsetTasks} task(s) of the subset ${screening.subset} (of ${fullTasks} in the full set)`,
    stage1.text.trimEnd(),
    '',
    `stage 2: the full set for the models ${rule} (at most ${keptAtMost} of ${rest.length}); the subset's answers are reused, so each pays for the other ${fullTasks - subsetTasks} task(s):`,
    ...rest.map((r) => `  ${r.model}: expected ${usd(r.expected)}, worst case ${usd(r.worst)}`),
    `stage 2 at most: expected ${usd(s2.expected)}, worst case ${usd(s2.worst)}${screening.top === null ? ' (if every model reaches the threshold)' : ''}`,
    '',
    `screening sweep: stage 1 ${usd(s1.expected)} + stage 2 at most ${usd(s2.expected)} = at most ${usd(s1.expected + s2.expected)} expected (worst case ${usd(s1.worst + s2.worst)})`,
    `  if a quarter of the models are kept: ${usd(s1.expected + perModel(Math.ceil(rest.length / 4)))} expected`,
    `the same sweep without screening (every model on the full set): expected ${usd(f.expected)}, worst case ${usd(f.worst)}`,
  ];
  if (sweep.budgetUsd !== null)
    out.push(
      `budget ${usd(sweep.budgetUsd)} for both stages: ${s1.expected > sweep.budgetUsd ? 'below the screening stage alone; the sweep will stop budget_exhausted in stage 1' : s1.expected + s2.expected > sweep.budgetUsd ? 'covers the screening stage; stage 2 may stop budget_exhausted if many models are kept' : 'covers both stages as expected'}`,
    );
  return { rows: stage1.rows, text: `${out.join('\n')}\n` };
}

export function sweepPlanCommand(file: string): number {
  process.stdout.write(planSweep(loadSweep(file)).text);
  return 0;
}

// ---- the sweep's directory ----

interface SweepIndex {
  file: string;
  runs: Array<{ runId: string; dir: string; createdAt: string }>;
}

const INDEX_FILE = 'sweep.json';

function readIndex(sweep: Sweep): SweepIndex {
  const path = join(sweep.out, INDEX_FILE);
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as SweepIndex) : { file: sweep.file, runs: [] };
}

/** The run's directory below the sweep's, recorded in sweep.json (once). */
export function sweepRunDir(sweep: Sweep, run: ResolvedRun): string {
  const index = readIndex(sweep);
  const existing = index.runs.find((r) => r.runId === run.runId);
  if (existing) return join(sweep.out, existing.dir);
  const dir = runFolderName(run.spec, run.runId);
  index.runs.push({ runId: run.runId, dir, createdAt: new Date().toISOString() });
  mkdirSync(sweep.out, { recursive: true });
  writeFileSync(join(sweep.out, INDEX_FILE), `${JSON.stringify(index, null, 2)}\n`);
  return join(sweep.out, dir);
}

function sweepRuns(sweep: Sweep): Array<{ runId: string; dir: string }> {
  const runs = readIndex(sweep)
    .runs.map((r) => ({ runId: r.runId, dir: join(sweep.out, r.dir) }))
    .filter((r) => existsSync(join(r.dir, 'rcb.sqlite')));
  if (!runs.length) throw new UsageError(`the sweep ${sweep.file} has no run yet in ${sweep.out}; start it with \`rcb sweep run ${sweep.file}\``);
  return runs.reverse(); // latest first
}

// ---- status and report ----

export async function sweepStatusCommand(file: string): Promise<number> {
  const sweep = readSweep(file);
  const lines: string[] = [];
  for (const { runId, dir } of sweepRuns(sweep)) {
    const { store } = openRunDir(dir, false);
    try {
      const run = await store.getRun(runId);
      if (!run) continue;
      const tasks = await store.listTasks(runId);
      const answers = await store.getCompletions(tasks.map((t) => t.taskId));
      const judged = new Set((await store.listVerdicts(runId)).map((v) => v.taskId));
      lines.push(
        `run ${runId} (${dir}): ${run.status}, spend $${run.spentUsd.toFixed(4)}${run.spec.budgetUsd !== null ? ` of $${run.spec.budgetUsd.toFixed(2)}` : ''}`,
      );
      for (const m of run.spec.models) {
        const mine = tasks.filter((t) => t.model === m.id);
        const a = mine.map((t) => answers.get(t.taskId)).filter((c) => c !== undefined);
        const account = await store.getRun(budgetAccountId(runId, m.id));
        const spent = a.reduce((x, c) => x + c!.costUsd, 0);
        const mode = sweep.models.find((s) => s.name === m.id)?.mode ?? 'interactive';
        lines.push(
          `  ${m.id} (${mode}): ${a.length}/${mine.length} answered${a.some((c) => c!.error) ? ` (${a.filter((c) => c!.error).length} errors)` : ''}, ` +
            `${mine.filter((t) => judged.has(t.taskId)).length}/${mine.length} judged, spend $${spent.toFixed(4)}` +
            (account?.spec.budgetUsd != null ? ` of $${account.spec.budgetUsd.toFixed(2)}` : ''),
        );
      }
    } finally {
      await store.close();
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

export async function sweepReportCommand(file: string, opts: { format: string; judge?: string; subset: string }): Promise<number> {
  const flags = parseReportFlags(opts);
  const sweep = readSweep(file);
  const runs = sweepRuns(sweep);
  const reports: Array<{ runId: string; dir: string; text: string }> = [];
  for (const { runId, dir } of runs) {
    const { store } = openRunDir(dir, false);
    try {
      const { text } = await buildReport(store, runId, flags).catch((e: Error) => {
        throw new UsageError(e.message);
      });
      reports.push({ runId, dir, text });
    } finally {
      await store.close();
    }
  }
  if (flags.format === 'json') {
    process.stdout.write(
      `${JSON.stringify(
        reports.map((r) => ({ runId: r.runId, dir: r.dir, report: JSON.parse(r.text) })),
        null,
        2,
      )}\n`,
    );
  } else if (flags.format === 'official' || reports.length === 1) {
    if (reports.length > 1)
      process.stderr.write(
        `the sweep has ${reports.length} runs; overall_stats.json of the latest (${reports[0].runId}); the others: ${reports
          .slice(1)
          .map((r) => r.dir)
          .join(', ')}\n`,
      );
    process.stdout.write(reports[0].text);
  } else {
    process.stdout.write(reports.map((r) => `== run ${r.runId} (${r.dir}) ==\n${r.text}`).join('\n'));
  }
  return 0;
}

/** A sweep's run as `rcb run` flags: the same spec, so the same run and task ids. */
export function sweepRunFlags(sweep: Sweep): RunSpecFlags {
  return {
    pset: sweep.pset ?? undefined,
    model: sweep.models.map((m) => m.name),
    samples: String(sweep.samples),
    paper: sweep.withPaper,
    papers: sweep.papers?.join(','),
    timeout: String(sweep.timeoutSec),
    promptTemplate: sweep.promptTemplate ?? undefined,
    budget: sweep.budgetUsd === null ? undefined : String(sweep.budgetUsd),
  };
}
