/**
 * Evaluation speed: the same oracle candidates (every snippet's own body spliced back)
 * through
 *   (a) a baseline shaped like the original harness: one candidate at a time, a full copy
 *       of the paper folder each, a fresh `python paper2code_test.py` (no sandbox);
 *   (b) the cold executor with its default jobs (one per core);
 *   (c) the warm pool with the same jobs, its start-up (imports) included in the time.
 * Prints wall times, the ratios a/c and b/c, and whether the three agree on every verdict
 * (original pass rule, SPEC 7).
 *
 *   npm run bench -- evaluation [--pset DIR] [--python PATH] [--papers ID...] [--repeat N] [--jobs N] [--only a,b,c]
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Candidate, RawExecution } from '../core/executor';
import { DEFAULT_LIMITS } from '../core/executor';
import { OFFICIAL_MARKERS, officialPass } from '../core/judge';
import { originalBody } from '../core/prompt/mask';
import { candidateFor } from '../core/run/evaluate';
import { loadPset } from '../core/pset/read-pset';
import { createColdExecutor, createWarmExecutor } from '../adapters/local/executor';
import { sandboxEnvironment } from '../adapters/local/executor/environment';

interface EvaluationArgs {
  pset: string;
  python: string;
  papers?: string[];
  repeat: number;
  jobs: number;
  only: Set<string>;
}

function parseArgs(args: string[]): EvaluationArgs {
  const out: EvaluationArgs = {
    pset: resolve(__dirname, '..', 'examples', 'pset-mini'),
    python: '/usr/bin/python3',
    repeat: 1,
    jobs: Math.max(1, cpus().length),
    only: new Set(['a', 'b', 'c']),
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = (): string => {
      const v = args[++i];
      if (v === undefined) throw new Error(`bench evaluation: ${arg} needs a value`);
      return v;
    };
    if (arg === '--pset') out.pset = resolve(value());
    else if (arg === '--python') out.python = value();
    else if (arg === '--repeat') out.repeat = Number(value());
    else if (arg === '--jobs') out.jobs = Number(value());
    else if (arg === '--only') out.only = new Set(value().split(','));
    else if (arg === '--papers') {
      out.papers = [];
      while (i + 1 < args.length && !args[i + 1].startsWith('--')) out.papers.push(...args[++i].split(',').filter(Boolean));
    } else throw new Error(`bench evaluation: unknown argument ${arg}`);
  }
  if (!(Number.isInteger(out.repeat) && out.repeat >= 1)) throw new Error('bench evaluation: --repeat must be a positive integer');
  if (!(Number.isInteger(out.jobs) && out.jobs >= 1)) throw new Error('bench evaluation: --jobs must be a positive integer');
  return out;
}

/** Every snippet of the selected papers answered with its own body, `repeat` times. */
export function oracleCandidates(psetDir: string, papers: string[] | undefined, repeat: number): Candidate[] {
  const pset = loadPset(psetDir, papers ? { papers } : {});
  const candidates: Candidate[] = [];
  for (let r = 0; r < repeat; r++) {
    for (const paper of pset.papers) {
      for (const snippet of paper.snippets) {
        candidates.push(candidateFor(`${paper.meta.id}/${snippet.file}/${snippet.name}#${r}`, paper, snippet, originalBody(snippet)));
      }
    }
  }
  return candidates;
}

/** The original harness's way: copy the folder, write the file, run python, apply the pass rule. */
async function baselineOne(candidate: Candidate, python: string, env: Record<string, string>): Promise<boolean> {
  const dir = await mkdtemp(join(tmpdir(), 'rcb-bench-baseline-'));
  try {
    await cp(candidate.paperDir, dir, { recursive: true });
    await writeFile(join(dir, candidate.file), candidate.source);
    return await new Promise<boolean>((resolvePass) => {
      const child = spawn(python, ['paper2code_test.py'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
      const timer = setTimeout(() => child.kill('SIGKILL'), DEFAULT_LIMITS.timeoutSec * 1000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolvePass(code === 0 && !OFFICIAL_MARKERS.some((m) => output.includes(m)));
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = process.hrtime.bigint();
  const value = await run();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, value };
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

export async function benchEvaluation(args: string[]): Promise<void> {
  const options = parseArgs(args);
  const candidates = oracleCandidates(options.pset, options.papers, options.repeat);
  const env = sandboxEnvironment();
  const quiet = (): void => undefined;
  process.stdout.write(
    `evaluation bench: ${candidates.length} oracle candidates from ${options.pset}` +
      `${options.papers ? ` (papers ${options.papers.join(', ')})` : ''}, python ${options.python}, ` +
      `${cpus().length} cores, jobs ${options.jobs}\n`,
  );

  const rows: { name: string; ms: number; passes: boolean[] }[] = [];
  const passesOf = (raws: RawExecution[]): boolean[] => raws.map((r) => !r.infraError && officialPass(r));

  if (options.only.has('a')) {
    const a = await timed(async () => {
      const passes: boolean[] = [];
      for (const c of candidates) passes.push(await baselineOne(c, options.python, env));
      return passes;
    });
    rows.push({ name: '(a) baseline: sequential, folder copy, cold python, no sandbox', ms: a.ms, passes: a.value });
  }
  if (options.only.has('b')) {
    const b = await timed(async () => {
      const executor = await createColdExecutor({ python: options.python, jobs: options.jobs, warn: quiet });
      try {
        return passesOf(await executor.run(candidates));
      } finally {
        await executor.close();
      }
    });
    rows.push({ name: `(b) cold executor, bwrap, jobs ${options.jobs}`, ms: b.ms, passes: b.value });
  }
  let preloaded = '';
  if (options.only.has('c')) {
    const c = await timed(async () => {
      const executor = await createWarmExecutor({ python: options.python, jobs: options.jobs, warn: quiet });
      try {
        const result = passesOf(await executor.run(candidates));
        preloaded = executor.lastHello?.preloaded.join(', ') ?? '';
        return result;
      } finally {
        await executor.close();
      }
    });
    rows.push({ name: `(c) warm pool, bwrap, jobs ${options.jobs} (start-up included)`, ms: c.ms, passes: c.value });
  }

  for (const row of rows) {
    const passed = row.passes.filter(Boolean).length;
    process.stdout.write(`${row.name.padEnd(66)} ${seconds(row.ms).padStart(9)}   ${passed}/${row.passes.length} pass\n`);
  }
  if (preloaded) process.stdout.write(`warm pool preloaded: ${preloaded}\n`);
  const find = (prefix: string) => rows.find((r) => r.name.startsWith(prefix));
  const [a, b, c] = [find('(a)'), find('(b)'), find('(c)')];
  if (c && a) process.stdout.write(`a/c = ${(a.ms / c.ms).toFixed(1)}x\n`);
  if (c && b) process.stdout.write(`b/c = ${(b.ms / c.ms).toFixed(1)}x\n`);
  if (rows.length > 1) {
    const same = rows.every((r) => r.passes.every((p, i) => p === rows[0].passes[i]));
    process.stdout.write(`verdicts identical across runs: ${same ? 'yes' : 'NO'}\n`);
    if (!same) process.exitCode = 1;
  }
}

if (require.main === module) {
  benchEvaluation(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
