/** `rcb report` and `rcb import-official`. */
import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildReport } from '../../core/report/build-report';
import { buildHtmlReport, type HtmlRunInput } from '../../core/report/html-report';
import { importOverallStats } from '../../core/report/official';
import { asUsageError, openRunDir, parseReportFlags, readRunDir, UsageError, writeRunId } from './common';
import { taskSources, type TaskSourceFlags } from './task-sources';

export interface ReportCommandOptions extends TaskSourceFlags {
  format: string;
  judge?: string;
  subset: string;
}

/** The formats a reader reads one run after another; the others are one file per run. */
const STACKABLE = new Set(['table', 'markdown']);

export async function reportCommand(runDirs: string[], opts: ReportCommandOptions): Promise<number> {
  const flags = parseReportFlags(opts);
  if (runDirs.length > 1 && flags.format !== 'html' && !STACKABLE.has(flags.format)) {
    throw new UsageError(`--format ${flags.format} takes one run directory (got ${runDirs.length}); --format html puts several runs on one page`);
  }
  if (flags.format === 'html') {
    const inputs: HtmlRunInput[] = [];
    for (const dir of runDirs) {
      const loaded = await readRunDir(dir);
      inputs.push({ label: dir, loaded, sources: taskSources(loaded.run, opts) });
    }
    try {
      process.stdout.write(buildHtmlReport(inputs, { judge: flags.judge, subset: flags.subset }));
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    return 0;
  }
  for (const [i, runDir] of runDirs.entries()) {
    const { store, runId } = openRunDir(runDir, false);
    try {
      if (!runId) throw new UsageError(`${resolve(runDir)} has no run.json`);
      const { text } = await buildReport(store, runId, flags).catch((e: unknown) => {
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

export async function importOfficialCommand(file: string, opts: { out: string }): Promise<number> {
  const path = resolve(file);
  if (!existsSync(path)) throw new UsageError(`${path} does not exist`);
  let imported;
  try {
    imported = importOverallStats(readFileSync(path, 'utf8'), path);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
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
