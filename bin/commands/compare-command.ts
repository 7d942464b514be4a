/** `rcb compare RUN_A RUN_B`: per model, the paired difference with its interval and the tasks that flipped. */
import { resolve } from 'node:path';
import type { Judge } from '../../core/types';
import { defaultJudge } from '../../core/report/build-report';
import { loadRun, type LoadedRun } from '../../core/report/loaded-run';
import { compareRuns, formatComparison } from '../../core/report/compare-runs';
import { openRunDir, UsageError } from './common';

async function readRun(dir: string): Promise<LoadedRun> {
  const { store, runId } = openRunDir(dir, false);
  try {
    if (!runId) throw new UsageError(`${resolve(dir)} has no run.json`);
    return await loadRun(store, runId);
  } finally {
    await store.close();
  }
}

export async function compareCommand(dirA: string, dirB: string, opts: { judge?: string; json?: boolean }): Promise<number> {
  if (opts.judge !== undefined && opts.judge !== 'strict' && opts.judge !== 'official') {
    throw new UsageError(`--judge must be one of strict, official (got "${opts.judge}")`);
  }
  const a = await readRun(dirA);
  const b = await readRun(dirB);
  // An imported run knows only the official rule; compare both runs under one judge.
  const judge: Judge =
    (opts.judge as Judge | undefined) ?? (defaultJudge(a.run, 'table') === 'official' || defaultJudge(b.run, 'table') === 'official' ? 'official' : 'strict');
  if (judge === 'strict' && (a.run.source === 'import' || b.run.source === 'import')) {
    throw new UsageError('an imported run records only the original pass rule: use --judge official');
  }
  const comparison = compareRuns(a, b, judge);
  process.stdout.write(opts.json ? `${JSON.stringify(comparison, null, 2)}\n` : formatComparison(comparison, resolve(dirA), resolve(dirB)));
  return 0;
}
