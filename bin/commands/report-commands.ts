/** `rcb report` and `rcb import-official`. */
import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Judge } from '../../core/types';
import type { Subset } from '../../core/scoring';
import { REPORT_FORMATS, type ReportFormat } from '../../core/report/format';
import { buildReport } from '../../core/report/build-report';
import { importOverallStats } from '../../core/report/official';
import { openRunDir, UsageError, writeRunId } from './common';

const JUDGES: Judge[] = ['strict', 'official'];
const SUBSETS: Subset[] = ['all', 'safe-common', 'safe-per-model'];

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw new UsageError(`${flag} must be one of ${allowed.join(', ')} (got "${value}")`);
  return value as T;
}

export async function reportCommand(runDir: string, opts: { format: string; judge?: string; subset: string }): Promise<number> {
  const format = oneOf('--format', opts.format, REPORT_FORMATS) as ReportFormat;
  const subset = oneOf('--subset', opts.subset, SUBSETS);
  const { store, runId } = openRunDir(runDir, false);
  try {
    if (!runId) throw new UsageError(`${resolve(runDir)} has no run.json`);
    const run = await store.getRun(runId);
    // Imported runs know only the original rule; everything else defaults to the strict one.
    const judge = oneOf('--judge', opts.judge ?? (run?.source === 'import' ? 'official' : 'strict'), JUDGES);
    const { text } = await buildReport(store, runId, { format, judge, subset }).catch((e: Error) => {
      throw new UsageError(e.message);
    });
    process.stdout.write(text);
    return 0;
  } finally {
    await store.close();
  }
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
