/**
 * `rcb doctor`: runs each paper's oracle here and says, per paper, whether its tests run,
 * and for those that do not, the missing module or the first error line. `rcb run` reads
 * the results it caches, so a run does not check again what doctor just checked.
 */
import { join } from 'node:path';
import { checkEnvironment } from '../../core/run/env-check';
import { FileEnvironmentCache } from '../../adapters/local/environment-cache';
import { createLocalExecutor } from '../../adapters/executor';
import { cacheDir, defaultPython, interpreterPath, loadPsetOrFail, parseList, parseNumber, UsageError, sandboxFromFlags, type SandboxFlags } from './common';

export interface DoctorOptions extends SandboxFlags {
  pset?: string;
  python?: string;
  papers?: string;
  json?: boolean;
  timeout: string;
}

export async function doctorCommand(opts: DoctorOptions): Promise<number> {
  const pset = loadPsetOrFail(opts.pset, parseList(opts.papers));
  const python = opts.python ?? defaultPython();
  const timeoutSec = parseNumber('--timeout', opts.timeout, 1);
  // The cold executor: one test per paper, so a warm pool's start-up would not pay off.
  const executor = await createLocalExecutor({ warm: false, python, timeoutSec, sandbox: sandboxFromFlags(opts) }).catch((e: Error) => {
    throw new UsageError(e.message);
  });
  const interpreter = interpreterPath(python);
  let papers;
  try {
    process.stderr.write(`running the oracle of ${pset.papers.length} paper(s) with ${interpreter}...\n`);
    papers = await checkEnvironment({ executor, cache: new FileEnvironmentCache(join(cacheDir(), 'environment.json')) }, { pset, interpreter, refresh: true });
  } finally {
    await executor.close();
  }
  const running = papers.filter((p) => p.runs).length;
  if (opts.json) {
    process.stdout.write(JSON.stringify(papers.map((p) => ({ paper: p.paper, runs: p.runs, reason: p.reason })), null, 2) + '\n');
  } else {
    const width = Math.max(5, ...papers.map((p) => p.paper.length));
    process.stdout.write(`${'paper'.padEnd(width)}  runs  reason\n${'-'.repeat(width)}  ----  ------\n`);
    for (const p of papers) process.stdout.write(`${p.paper.padEnd(width)}  ${p.runs ? 'yes ' : 'no  '}  ${p.reason ?? ''}`.trimEnd() + '\n');
  }
  process.stderr.write(
    `${running} of ${papers.length} paper(s) run here (${interpreter}); ` +
      (running < papers.length ? 'rcb run reports the tasks of the others as env_broken, out of the scores\n' : 'every paper runs\n'),
  );
  return running === papers.length ? 0 : 1;
}
