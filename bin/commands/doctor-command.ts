/**
 * `rcb doctor`: runs each paper's oracle here and says, per paper, whether its tests run,
 * and for those that do not, the missing module or the first error line. `rcb run` reads
 * the results it caches, so a run does not check again what doctor just checked.
 *
 * With `--repeat N`: every snippet's oracle N times instead, and the snippets whose verdict
 * changes between runs (flaky references) listed; `rcb run` then flags their verdicts
 * (core/run/reference-repeat.ts).
 */
import { dirname, join } from 'node:path';
import { explainGap, readEnvNotes } from '../../adapters/local/paper-env/assets';
import { readEnvMarker } from '../../adapters/local/paper-env/location';
import { lockFile, notesFile } from './env-command';
import { checkEnvironment } from '../../core/run/env-check';
import { FileEnvironmentCache, FileFlakyCache } from '../../adapters/local/environment-cache';
import { createLocalExecutor, defaultJobs } from '../../adapters/executor';
import { isFlaky, repeatReferences, type PaperRepeat } from '../../core/run/reference-repeat';
import type { Pset } from '../../core/types';
import { MAX_TIMEOUT_SEC } from '../../core/limits';
import {
  cacheDir,
  defaultPython,
  interpreterPath,
  loadPsetOrFail,
  parseList,
  parseNumber,
  parsePositiveInt,
  pythonFlag,
  UsageError,
  sandboxFromFlags,
  type SandboxFlags,
} from './common';

export interface DoctorOptions extends SandboxFlags {
  pset?: string;
  python?: string;
  papers?: string;
  json?: boolean;
  timeout: string;
  /** Run every snippet's oracle this many times and list those whose verdict changes. */
  repeat?: string;
  jobs?: string;
}

export async function doctorCommand(opts: DoctorOptions): Promise<number> {
  const pset = loadPsetOrFail(opts.pset, parseList(opts.papers));
  const python = pythonFlag(opts.python) ?? defaultPython();
  const timeoutSec = parseNumber('--timeout', opts.timeout, 1, MAX_TIMEOUT_SEC);
  if (opts.repeat !== undefined) return repeatCommand(opts, pset, python, timeoutSec);
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
  const notes = knownGaps(interpreter);
  const noted = papers.map((p) => ({ ...p, note: p.runs || !p.reason ? null : notes(p.paper, p.reason) }));
  if (opts.json) {
    process.stdout.write(
      `${JSON.stringify(
        noted.map((p) => ({ paper: p.paper, runs: p.runs, reason: p.reason, note: p.note })),
        null,
        2,
      )}\n`,
    );
  } else {
    const width = Math.max(5, ...papers.map((p) => p.paper.length));
    process.stdout.write(`${'paper'.padEnd(width)}  runs  reason\n${'-'.repeat(width)}  ----  ------\n`);
    for (const p of noted) {
      const reason = p.note ? `${p.note} (${p.reason})` : (p.reason ?? '');
      process.stdout.write(`${`${p.paper.padEnd(width)}  ${p.runs ? 'yes ' : 'no  '}  ${reason}`.trimEnd()}\n`);
    }
  }
  process.stderr.write(
    `${running} of ${papers.length} paper(s) run here (${interpreter}); ` +
      (running < papers.length ? 'rcb run reports the tasks of the others as env_broken, out of the scores\n' : 'every paper runs\n'),
  );
  return running === papers.length ? 0 : 1;
}

/**
 * The known gaps of rcb's environment (container/requirements-assets.json): why a paper cannot
 * run with the lock, in one line, for the papers whose reason matches. The assets are looked
 * for in the interpreter's environment when it is one `rcb env install` made.
 */
function knownGaps(interpreter: string): (paper: string, reason: string) => string | null {
  const envDir = dirname(dirname(interpreter));
  const ours = readEnvMarker(envDir) ? envDir : null;
  let notes;
  try {
    notes = readEnvNotes(notesFile(lockFile()));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return (paper, reason) => explainGap(notes, paper, reason, ours);
}

/** `rcb doctor --repeat N`: every snippet's oracle N times, through the warm executor `rcb run` uses. */
async function repeatCommand(opts: DoctorOptions, pset: Pset, python: string, timeoutSec: number): Promise<number> {
  const repeat = parsePositiveInt('--repeat', opts.repeat!);
  if (repeat < 2) throw new UsageError('--repeat must be at least 2: a verdict can only change between runs');
  const jobs = opts.jobs ? parsePositiveInt('--jobs', opts.jobs) : defaultJobs();
  const executor = await createLocalExecutor({ warm: true, python, jobs, timeoutSec, sandbox: sandboxFromFlags(opts) }).catch((e: Error) => {
    throw new UsageError(e.message);
  });
  const interpreter = interpreterPath(python);
  const snippets = pset.papers.reduce((a, p) => a + p.snippets.length, 0);
  let papers: PaperRepeat[];
  try {
    process.stderr.write(
      `running the oracle of each of ${snippets} snippet(s) of ${pset.papers.length} paper(s) ${repeat} times with ${interpreter} (${jobs} job(s))...\n`,
    );
    let done = 0;
    const every = Math.max(1, Math.floor((snippets * repeat) / 20));
    const progress = {
      start() {},
      end() {},
      note(m: string) {
        process.stderr.write(`${m}\n`);
      },
      advance() {
        if (++done % every === 0) process.stderr.write(`  ${done}/${snippets * repeat} oracle run(s)\n`);
      },
    };
    papers = await repeatReferences({ executor, progress }, { pset, repeat });
  } finally {
    await executor.close();
  }
  const cache = new FileFlakyCache(join(cacheDir(), 'flaky.json'));
  for (const p of papers) {
    const paper = pset.papers.find((x) => x.meta.id === p.paper)!;
    cache.put(paper.digest, interpreter, { paper: p.paper, repeat, flaky: p.snippets.filter(isFlaky).map(({ file, snippet }) => ({ file, snippet })) });
  }
  const all = papers.flatMap((p) => p.snippets);
  const flaky = all.filter(isFlaky);
  const neverPass = all.filter((s) => s.runs > 0 && s.strictPasses === 0 && !isFlaky(s));
  const incomplete = all.filter((s) => s.runs < repeat);
  if (opts.json) {
    process.stdout.write(
      `${JSON.stringify(
        all.map((s) => ({ ...s, flaky: isFlaky(s) })),
        null,
        2,
      )}\n`,
    );
  } else {
    const rows = [...flaky.map((s) => ['flaky', s] as const), ...neverPass.map((s) => ['fails', s] as const)];
    if (rows.length) {
      const name = (s: (typeof all)[number]) => `${s.paper}/${s.file}/${s.snippet}`;
      const width = Math.max(7, ...rows.map(([, s]) => name(s).length));
      process.stdout.write(`${'snippet'.padEnd(width)}  verdict  strict  official  reasons\n${'-'.repeat(width)}  -------  ------  --------  -------\n`);
      for (const [kind, s] of rows) {
        process.stdout.write(
          `${`${name(s).padEnd(width)}  ${kind.padEnd(7)}  ${`${s.strictPasses}/${s.runs}`.padEnd(6)}  ${`${s.officialPasses}/${s.runs}`.padEnd(8)}  ${s.reasons.join('; ')}`.trimEnd()}\n`,
        );
      }
    }
  }
  process.stderr.write(
    `${flaky.length} flaky snippet(s) of ${all.length}, each oracle run ${repeat} times with ${interpreter}` +
      (flaky.length ? ': rcb run flags their verdicts flaky_reference and the reports count them (a fix is a pset overlay: docs/environment-checks.md)' : '') +
      (neverPass.length ? `; ${neverPass.length} snippet(s) whose oracle never passes (rcb doctor without --repeat names the paper's error)` : '') +
      (incomplete.length ? `; ${incomplete.length} snippet(s) with runs lost to executor failures` : '') +
      '\n',
  );
  return flaky.length || neverPass.length ? 1 : 0;
}
