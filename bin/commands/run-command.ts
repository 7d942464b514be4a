/** `rcb run`: the whole benchmark on this machine. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { runFolderName } from '../../core/ids';
import { runBenchmark } from '../../core/run/run-benchmark';
import { buildReport } from '../../core/report/build-report';
import { TerminalProgress } from '../../adapters/local/terminal-progress';
import { SqliteCompletionCache } from '../../adapters/local/sqlite-store';
import { createLocalExecutor, defaultJobs } from '../../adapters/local/executor';
import { defaultPython, openRunDir, parsePositiveInt, runIdIn, UsageError, writeRunId } from './common';
import { resolveRun, type RunSpecFlags } from './resolve-run';
import type { HostedModels } from '../../adapters/models/hosted-models';
import { estimateRun, formatEstimates } from './model-commands';

export interface RunOptions extends RunSpecFlags {
  jobs?: string;
  python?: string;
  out?: string;
  unsafeNoSandbox?: boolean;
  concurrency: string;
  modelsFile?: string;
  executor: string;
}

/** Paid answers are shared by every run on this machine: the same task is never bought twice. */
function openCompletionCache(): SqliteCompletionCache {
  const dir = process.env.RCB_CACHE_DIR || join(homedir(), '.cache', 'rcb');
  mkdirSync(dir, { recursive: true });
  return new SqliteCompletionCache(join(dir, 'completions.sqlite'));
}

export async function runCommand(opts: RunOptions, hosted: HostedModels): Promise<number> {
  const { pset, template, models, spec, runId, samples, temperature, budgetUsd } = resolveRun(opts, hosted);
  const jobs = opts.jobs ? parsePositiveInt('--jobs', opts.jobs) : defaultJobs();
  if (opts.executor !== 'warm' && opts.executor !== 'cold') throw new UsageError(`--executor must be warm or cold (got "${opts.executor}")`);
  const paid = models.costs.size > 0;
  const generationConcurrency = paid ? parsePositiveInt('--concurrency', opts.concurrency) : Math.max(jobs * 4, 8);
  const outDir = resolve(opts.out ?? join('runs', runFolderName(spec, runId)));
  // Every check that can refuse the run comes before the run directory is created: a
  // refused run leaves nothing behind (test/reliability/bad-inputs.test.ts).
  const existingId = runIdIn(outDir);
  if (existingId && existingId !== runId) throw new UsageError(`${outDir} holds another run (${existingId}); choose another --out or remove it`);
  if (paid) {
    const missing = await hosted.checkKeys([...models.costs.keys()]);
    if (missing.length) throw new UsageError(`missing API keys: ${missing.join('; ')}`);
    // The summary before every paid run: what it will cost, before the first call.
    const ids = [...models.costs.keys()];
    process.stderr.write(formatEstimates(estimateRun(hosted, ids, pset, template, opts.paper, samples, temperature), budgetUsd));
    if (budgetUsd === null) process.stderr.write('warning: no --budget given for a run with paid models; spend is recorded but not capped\n');
  }

  const executor = await createLocalExecutor({
    warm: opts.executor === 'warm',
    python: opts.python ?? defaultPython(),
    jobs,
    timeoutSec: spec.timeoutSec,
    unsafeNoSandbox: !!opts.unsafeNoSandbox,
  }).catch((e: Error) => {
    throw new UsageError(e.message);
  });
  let opened: ReturnType<typeof openRunDir>;
  try {
    opened = openRunDir(outDir, true);
  } catch (e) {
    await executor.close();
    throw e;
  }
  const { store, dir } = opened;
  writeRunId(dir, runId);
  const cache = paid ? openCompletionCache() : undefined;
  const progress = new TerminalProgress();
  const abort = new AbortController();
  const onSignal = () => {
    progress.note('interrupted: finishing the tasks in flight; run the same command again to resume');
    abort.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const started = Date.now();
  progress.note(`run ${runId} in ${dir}: ${pset.papers.length} paper(s), ${spec.models.length} model(s), ${samples} sample(s), ${jobs} job(s)`);
  try {
    const result = await runBenchmark(
      { store, clients: models.clients, executor, costs: models.costs, cache, progress },
      {
        runId,
        spec,
        pset,
        template,
        models: models.info,
        generationConcurrency,
        clearStaleReservations: true,
        signal: abort.signal,
      },
    );
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const { text } = await buildReport(store, runId, { format: 'table', judge: 'strict', subset: 'all' });
    const official = await buildReport(store, runId, { format: 'official', judge: 'official', subset: 'all' });
    writeFileSync(join(dir, 'leaderboard.txt'), text);
    writeFileSync(join(dir, 'overall_stats.json'), official.text);
    process.stdout.write('\n' + text);
    const g = result.generation;
    process.stdout.write(
      `\nrun ${result.run.status} in ${seconds}s: ${g.called} model call(s), ${g.reused} answer(s) reused, ${result.evaluated} test(s) run` +
        (paid ? `, spend $${result.run.spentUsd.toFixed(4)}` : '') +
        `\nrun directory: ${dir}\n`,
    );
    if (result.run.status === 'budget_exhausted') {
      process.stderr.write('budget exhausted: run the same command with a higher --budget to finish the run\n');
      return 3;
    }
    return result.run.status === 'succeeded' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await executor.close();
    await store.close();
    cache?.close();
  }
}
