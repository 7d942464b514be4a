/** `rcb report` and `rcb import-official`. */
import { readFileSync, existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildReport } from '../../core/report/build-report';
import { buildHtmlReport, publishedBaseline, type HtmlBaseline, type HtmlRunInput } from '../../core/report/html-report';
import { loadRun, type LoadedRun } from '../../core/report/loaded-run';
import { importOverallStats, type ImportedRun } from '../../core/report/official';
import { describeDateChange, papersMissingFromPset, withPsetDates } from '../../core/report/official-dates';
import { asUsageError, loadPsetOrFail, openRunDir, parseReportFlags, readRunDir, UsageError, writeRunId } from './common';
import { taskSources, type TaskSourceFlags } from './task-sources';
import { estimateRun, estimateSourceOf, type EstimateSource, type SubsetEstimates } from '../../core/report/subset-estimate';
import { parseSubsetFile, subsetSha256 } from '../../core/subset/subset-file';
import { FIGURE_DPI, writeFigures } from '../../app/figures';
import { shownStatus } from '../../core/report/partial-run';
import { runOwnerAlive } from '../../app/run-owner';

export interface ReportCommandOptions extends TaskSourceFlags {
  format: string;
  judge?: string;
  subset: string;
  /** html: published scores to show beside the runs' (an overall_stats.json, or the run directory `rcb import-official` made of one). */
  baseline?: string;
  /** A subset file whose estimate the report adds (for any run: to check it against the run's own score). */
  subsetFile?: string;
  /** figures: the folder the SVG and PNG files go to. */
  out?: string;
}

/** The published results --baseline names: an overall_stats.json file, or a run directory. */
async function readBaseline(path: string): Promise<LoadedRun> {
  const full = resolve(path);
  if (!existsSync(full)) throw new UsageError(`--baseline ${path}: ${full} does not exist`);
  if (statSync(full).isFile()) {
    try {
      const imported = importOverallStats(readFileSync(full, 'utf8'), full);
      return { run: imported.run, tasks: imported.tasks, verdicts: new Map(imported.verdicts.map((v) => [v.taskId, v])), completions: new Map() };
    } catch (e) {
      throw new UsageError(`--baseline ${path}: ${(e as Error).message}`);
    }
  }
  const { store, runId } = openRunDir(full, false);
  try {
    if (!runId) throw new UsageError(`--baseline ${path}: ${full} has no run.json (give an overall_stats.json or a run directory)`);
    return await loadRun(store, runId);
  } finally {
    await store.close();
  }
}

/** The formats a reader reads one run after another; the others are one file per run. */
const STACKABLE = new Set(['table', 'markdown']);

export async function reportCommand(runDirs: string[], opts: ReportCommandOptions): Promise<number> {
  if (opts.format === 'figures') return figuresCommand(runDirs, opts);
  if (opts.out !== undefined) throw new UsageError(`--out names the folder of --format figures; --format ${opts.format} prints to stdout`);
  const flags = parseReportFlags(opts);
  if (opts.baseline !== undefined && flags.format === 'official')
    throw new UsageError('--baseline puts published scores beside the run; --format official is the original harness file, which has no place for them');
  const estimate = opts.subsetFile !== undefined ? readSubsetFlag(opts.subsetFile) : undefined;
  if (runDirs.length > 1 && flags.format !== 'html' && !STACKABLE.has(flags.format)) {
    throw new UsageError(`--format ${flags.format} takes one run directory (got ${runDirs.length}); --format html puts several runs on one page`);
  }
  if (flags.format === 'html') {
    const inputs: HtmlRunInput[] = [];
    for (const dir of runDirs) {
      const loaded = await readRunDir(dir);
      const from = estimateSourceOf(loaded.run, estimate);
      let subsetEstimate: SubsetEstimates | undefined;
      try {
        subsetEstimate = from ? estimateRun(loaded.run, loaded.tasks, loaded.verdicts, from) : undefined;
      } catch (e) {
        throw new UsageError(`${estimate ? '--subset-file ' : ''}${(e as Error).message}`);
      }
      inputs.push({
        label: dir,
        loaded,
        sources: taskSources(loaded.run, opts),
        estimate: subsetEstimate,
        shownStatus: shownStatus(loaded.run.status, runOwnerAlive(dir)),
      });
    }
    let baseline: HtmlBaseline | undefined;
    if (opts.baseline !== undefined) {
      const published = await readBaseline(opts.baseline);
      baseline = publishedBaseline(published, opts.baseline, [...new Set(inputs.flatMap((r) => r.loaded.tasks.map((t) => t.paper)))]);
    }
    try {
      process.stdout.write(buildHtmlReport(inputs, { judge: flags.judge, subset: flags.subset, baseline }));
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    return 0;
  }
  for (const [i, runDir] of runDirs.entries()) {
    const { store, runId } = openRunDir(runDir, false);
    try {
      if (!runId) throw new UsageError(`${resolve(runDir)} has no run.json`);
      const baseline = opts.baseline === undefined ? undefined : await baselineFor(opts.baseline, store, runId);
      const status = await store.getRun(runId);
      const shown = status ? shownStatus(status.status, runOwnerAlive(runDir)) : undefined;
      const { text } = await buildReport(store, runId, { ...flags, estimate, baseline, ...(shown ? { shownStatus: shown } : {}) }).catch((e: unknown) => {
        if (estimate && e instanceof Error && e.message.startsWith(estimate.source)) throw new UsageError(`--subset-file ${e.message}`);
        throw asUsageError(e);
      });
      if (runDirs.length > 1) process.stdout.write(`${i ? '\n' : ''}${flags.format === 'markdown' ? '## ' : '== '}${resolve(runDir)}\n\n`);
      process.stdout.write(text);
    } finally {
      await store.close();
    }
  }
  return 0;
}

/** --baseline's published scores, over the papers of the run. */
async function baselineFor(path: string, store: Parameters<typeof loadRun>[0], runId: string) {
  const published = await readBaseline(path);
  return publishedBaseline(published, path, [...new Set((await store.listTasks(runId)).map((t) => t.paper))]);
}

/** `--format figures --out DIR`: the paper's figures as SVG and PNG (app/figures.ts). */
async function figuresCommand(runDirs: string[], opts: ReportCommandOptions): Promise<number> {
  if (opts.out === undefined) throw new UsageError('--format figures writes files: give the folder with --out DIR');
  if (runDirs.length > 2) throw new UsageError(`--format figures takes one run directory, or two (with and without the paper); got ${runDirs.length}`);
  const flags = parseReportFlags({ ...opts, format: 'table' });
  const runs = [];
  for (const dir of runDirs) runs.push({ label: dir, loaded: await readRunDir(dir) });
  let written;
  try {
    written = await writeFigures(runs, resolve(opts.out), flags.judge);
  } catch (e) {
    throw asUsageError(e);
  }
  for (const f of written) {
    process.stdout.write(`${f.svg}\n${f.png}\n`);
    if (f.clipped.length) process.stderr.write(`warning: ${f.name}: ${f.clipped.length} label(s) drawn outside the figure: ${f.clipped.join(', ')}\n`);
  }
  process.stderr.write(`${written.length} figure(s) in ${resolve(opts.out)}, as SVG and PNG (${FIGURE_DPI} dpi)\n`);
  return 0;
}

/** `--pset DIR`: the papers' first commit dates from its papers.yaml, as the original harness reads them; each change said on stderr. */
function datesFromPset(imported: ImportedRun, file: string, psetDir: string): ImportedRun {
  const pset = loadPsetOrFail(psetDir);
  const metas = pset.papers.map((p) => p.meta);
  const missing = papersMissingFromPset(imported, metas);
  if (missing.length) throw new UsageError(`--pset ${psetDir}: ${pset.root} has no paper ${missing.join(', ')} of ${file}`);
  const { imported: dated, changes } = withPsetDates(imported, metas);
  for (const c of changes) process.stderr.write(`${describeDateChange(c, file, join(pset.root, 'papers.yaml'))}\n`);
  return dated;
}

/** `--subset-file FILE` read and checked; errors name the flag and the file. */
function readSubsetFlag(file: string): EstimateSource {
  const source = resolve(file);
  if (!existsSync(source)) throw new UsageError(`--subset-file ${source} does not exist (it names a file written by \`rcb subset build\`)`);
  try {
    const parsed = parseSubsetFile(readFileSync(source, 'utf8'), source);
    return { file: parsed, source, sha256: subsetSha256(parsed) };
  } catch (e) {
    throw new UsageError(`--subset-file ${(e as Error).message}`);
  }
}

export async function importOfficialCommand(file: string, opts: { out: string; pset?: string }): Promise<number> {
  const path = resolve(file);
  if (!existsSync(path)) throw new UsageError(`${path} does not exist`);
  let imported;
  try {
    imported = importOverallStats(readFileSync(path, 'utf8'), path);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (opts.pset !== undefined) imported = datesFromPset(imported, path, opts.pset);
  const { store, runId, dir } = openRunDir(opts.out, true);
  try {
    if (runId && runId !== imported.run.runId) throw new UsageError(`${dir} holds another run (${runId})`);
    await store.createRun(imported.run);
    await store.putTasks(imported.run.runId, imported.tasks);
    for (const v of imported.verdicts) await store.putVerdict(imported.run.runId, v);
    writeRunId(dir, imported.run.runId);
    process.stderr.write(
      `imported ${imported.tasks.length} result(s) of ${Object.keys(imported.run.models).length} model(s) on ${imported.run.papers.length} paper(s) into ${dir}\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}
