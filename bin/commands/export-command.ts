/** `rcb export RUN --format inspect --out DIR`: a run in another tool's format (Inspect AI eval logs). */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultJudge } from '../../core/report/build-report';
import { promptPrefixes, taskDetails } from '../../core/report/task-detail';
import { scoreStoredRun } from '../../core/scoring';
import { inspectLogs } from '../../core/export/inspect';
import { packageRoot } from '../../core/util/package-root';
import { readRunDir, UsageError } from './common';
import { outputFolder, writeFileAtomic } from '../../app/output-files';
import { terminalSafeJson } from '../../core/util/terminal-text';
import { taskSources, type TaskSourceFlags } from './task-sources';

export const EXPORT_FORMATS = ['inspect'] as const;

export interface ExportOptions extends TaskSourceFlags {
  format: string;
  out: string;
}

export async function exportCommand(runDir: string, opts: ExportOptions): Promise<number> {
  if (!(EXPORT_FORMATS as readonly string[]).includes(opts.format)) {
    throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')} (got "${opts.format}")`);
  }
  const loaded = await readRunDir(runDir);
  const { run } = loaded;
  const headlineJudge = defaultJudge(run, 'table');
  const sources = taskSources(run, opts);
  const details = taskDetails(loaded, headlineJudge, sources);
  const reports = {
    strict: scoreStoredRun(run, loaded.tasks, loaded.verdicts, 'strict', 'all'),
    official: scoreStoredRun(run, loaded.tasks, loaded.verdicts, 'official', 'all'),
  };
  const rcbVersion = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  const logs = inspectLogs({ run, details, prefixes: promptPrefixes(run, sources), pset: sources.pset, reports, headlineJudge, rcbVersion });
  if (!logs.length) throw new UsageError(`${resolve(runDir)} holds no task yet: nothing to export`);
  const out = outputFolder(resolve(opts.out));
  for (const l of logs) {
    const path = join(out, l.fileName);
    writeFileAtomic(path, `${terminalSafeJson(JSON.stringify(l.log, null, 2))}\n`);
    const headline = reports[headlineJudge].models.find((m) => m.model === l.model);
    process.stderr.write(
      `${path}: ${l.model}, ${l.samples} sample(s), ${l.scored} scored; scaled pass@1 (${headlineJudge}) ${headline?.tasks ? headline.scaled.mean.toFixed(2) : 'n/a'}%\n`,
    );
  }
  const missing = details.find((d) => d.promptTail === null);
  if (missing) process.stderr.write(`note: some inputs are not the prompt (${missing.notes.join('; ')})\n`);
  process.stderr.write(`open them with: inspect view --log-dir ${out}\n`);
  return 0;
}
