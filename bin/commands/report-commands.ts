/** `rcb report` and `rcb import-official`. */
import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildReport } from '../../core/report/build-report';
import { importOverallStats } from '../../core/report/official';
import { openRunDir, parseReportFlags, UsageError, writeRunId } from './common';

export async function reportCommand(runDir: string, opts: { format: string; judge?: string; subset: string }): Promise<number> {
  const flags = parseReportFlags(opts);
  const { store, runId } = openRunDir(runDir, false);
  try {
    if (!runId) throw new UsageError(`${resolve(runDir)} has no run.json`);
    const { text } = await buildReport(store, runId, flags).catch((e: Error) => {
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
