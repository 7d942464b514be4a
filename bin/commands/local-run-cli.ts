/**
 * `rcb run` and a local `rcb sweep run` on the command line: the flags that say how to run
 * here, read into app/local-run.ts's options, and the run's outcome printed.
 */
import type { LocalRunOptions, LocalRunOutcome } from '../../app/local-run';
import type { ResolvedRun } from '../../app/resolve-run';
import { parsePositiveInt, pythonFlag, sandboxFromFlags, UsageError, type SandboxFlags } from './common';

export interface LocalRunFlags extends SandboxFlags {
  jobs?: string;
  python?: string;
  out?: string;
  concurrency: string;
  executor: string;
  skipEnvCheck?: boolean;
}

/** The flags checked and read; `--concurrency` is read only for a run with paid models, the only ones it limits. */
export function localRunOptions(
  flags: LocalRunFlags,
  resolved: ResolvedRun,
  extras: Pick<LocalRunOptions, 'modelBudgets' | 'quietEstimate' | 'batch'> = {},
): LocalRunOptions {
  const jobs = flags.jobs ? parsePositiveInt('--jobs', flags.jobs) : undefined;
  if (flags.executor !== 'warm' && flags.executor !== 'cold') throw new UsageError(`--executor must be warm or cold (got "${flags.executor}")`);
  const sandbox = sandboxFromFlags(flags);
  const python = pythonFlag(flags.python);
  const paid = resolved.models.costs.size > 0;
  return {
    jobs,
    python,
    outDir: flags.out,
    concurrency: paid ? parsePositiveInt('--concurrency', flags.concurrency) : 0,
    executor: flags.executor,
    sandbox,
    skipEnvCheck: flags.skipEnvCheck,
    ...extras,
  };
}

/** What `rcb run` and a local `rcb sweep run` print of a finished (or cancelled) run; returns the exit code. */
export function printLocalRun(outcome: LocalRunOutcome): number {
  const { result, dir, seconds } = outcome;
  if (outcome.kind === 'cancelled') {
    const envNote = outcome.envBroken ? ` (and ${outcome.envBroken} env_broken, not run: their paper cannot run here)` : '';
    process.stderr.write(
      `run cancelled after ${seconds}s: ${outcome.judged} of ${result.tasks.length - outcome.envBroken} task(s) judged${envNote}, ${result.evaluated} test(s) run by this invocation\n` +
        `run the same command again to resume; the run directory is ${dir}\n`,
    );
    return outcome.exitCode;
  }
  process.stdout.write(`\n${outcome.leaderboard}`);
  process.stderr.write(outcome.errorSummary);
  const g = result.generation;
  process.stdout.write(
    `\nrun ${result.run.status} in ${seconds}s: ${g.called} model call(s), ${g.reused} answer(s) reused, ${result.evaluated} test(s) run` +
      (outcome.paid ? `, spend $${result.run.spentUsd.toFixed(4)}` : '') +
      `\nrun directory: ${dir}\n`,
  );
  if (result.batch && result.batch.open && !result.batch.cancelled && result.run.status !== 'budget_exhausted') {
    process.stderr.write(
      `${result.batch.open} task(s) wait on pending batches: run the same command again to collect them (or add --cancel-batches to cancel them)\n`,
    );
  }
  if (g.exhaustedModels?.length) process.stderr.write(`models whose own budget is spent: ${g.exhaustedModels.join(', ')}\n`);
  if (result.run.status === 'budget_exhausted') process.stderr.write('budget exhausted: run the same command with a higher --budget to finish the run\n');
  return outcome.exitCode;
}
