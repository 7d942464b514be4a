/** `rcb contamination RUN`: all papers beside the contamination-safe subsets, per model. */
import type { Judge } from '../../core/types';
import { defaultJudge } from '../../core/report/build-report';
import { contaminationTable, formatContaminationMarkdown, formatContaminationTable } from '../../core/report/contamination-table';
import { readRunDir, UsageError } from './common';

const FORMATS = ['table', 'markdown', 'json'] as const;

export async function contaminationCommand(dir: string, opts: { judge?: string; format: string }): Promise<number> {
  if (opts.judge !== undefined && opts.judge !== 'strict' && opts.judge !== 'official') {
    throw new UsageError(`--judge must be one of strict, official (got "${opts.judge}")`);
  }
  if (!(FORMATS as readonly string[]).includes(opts.format)) throw new UsageError(`--format must be one of ${FORMATS.join(', ')} (got "${opts.format}")`);
  const loaded = await readRunDir(dir);
  const judge = (opts.judge as Judge | undefined) ?? defaultJudge(loaded.run, 'table');
  if (judge === 'strict' && loaded.run.source === 'import') throw new UsageError('an imported run records only the original pass rule: use --judge official');
  const table = contaminationTable(loaded.run, loaded.tasks, loaded.verdicts, judge);
  const text =
    opts.format === 'json'
      ? `${JSON.stringify(table, null, 2)}\n`
      : opts.format === 'markdown'
        ? formatContaminationMarkdown(table)
        : formatContaminationTable(table);
  process.stdout.write(text);
  return 0;
}
