/** `rcb compare RUN_A RUN_B`: per model, the paired difference with its interval and the tasks that flipped. */
import { resolve } from 'node:path';
import type { Judge } from '../../core/types';
import { defaultJudge } from '../../core/report/build-report';
import { compareRuns, formatComparison, type RunComparison } from '../../core/report/compare-runs';
import type { LoadedRun } from '../../core/report/loaded-run';
import { readRunDir, UsageError } from './common';

export async function compareCommand(dirA: string, dirB: string, opts: { judge?: string; json?: boolean }): Promise<number> {
  if (opts.judge !== undefined && opts.judge !== 'strict' && opts.judge !== 'official') {
    throw new UsageError(`--judge must be one of strict, official (got "${opts.judge}")`);
  }
  const a = await readRunDir(dirA);
  const b = await readRunDir(dirB);
  // An imported run knows only the official rule; compare both runs under one judge.
  const judge: Judge =
    (opts.judge as Judge | undefined) ?? (defaultJudge(a.run, 'table') === 'official' || defaultJudge(b.run, 'table') === 'official' ? 'official' : 'strict');
  if (judge === 'strict' && (a.run.source === 'import' || b.run.source === 'import')) {
    throw new UsageError('an imported run records only the original pass rule: use --judge official');
  }
  const comparison = compareRuns(a, b, judge);
  // Nothing paired is no comparison: "0.00 vs 0.00, difference 0" would read as a tie.
  if (!comparison.models.some((m) => m.tasks > 0)) throw new UsageError(nothingInCommon(a, b, comparison, resolve(dirA), resolve(dirB)));
  process.stdout.write(opts.json ? `${JSON.stringify(comparison, null, 2)}\n` : formatComparison(comparison, resolve(dirA), resolve(dirB)));
  return 0;
}

/** Why two runs have no scored task in common: no model both ran, or no (paper, file, snippet) both scored. */
function nothingInCommon(a: LoadedRun, b: LoadedRun, c: RunComparison, dirA: string, dirB: string): string {
  const list = (xs: string[]) => [...new Set(xs)].sort().join(', ') || 'none';
  if (!c.models.length) {
    return `the runs have no model in common, so no task to compare (${dirA}: ${list(a.tasks.map((t) => t.model))}; ${dirB}: ${list(b.tasks.map((t) => t.model))})`;
  }
  return (
    `the runs have no scored task in common for ${list(c.models.map((m) => m.model))}, so nothing to compare ` +
    `(papers of ${dirA}: ${list(a.tasks.map((t) => t.paper))}; of ${dirB}: ${list(b.tasks.map((t) => t.paper))}; ` +
    'a paper that cannot run here (env_broken) is out of both)'
  );
}
