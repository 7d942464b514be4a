/**
 * Evaluation speed: the same oracle candidates (every snippet's own body spliced back)
 * through, in one process run, in interleaved rounds:
 *   original  the original harness's loop: one candidate at a time, a full copy of the
 *             paper folder each, a fresh `python paper2code_test.py` (no sandbox);
 *   cold      the cold executor, --jobs N;
 *   warm j1   the warm pool with one job, its start-up (imports) included;
 *   warm jN   the warm pool with N jobs, start-up included;
 *   rcbrun    the whole `rcb run --model oracle` as a user runs it (node dist/bin/rcb.js, a
 *             fresh cache folder: its environment check, generation, store, reports
 *             included), --jobs N; without `npm run build`, through tsx (slower: said so);
 *   floor     bench/floor-harness.py: one interpreter that preloads every module the
 *             papers' tests import (learned before the rounds), then copies, splices and
 *             forks per test, N at a time, no sandbox, one BLAS thread, start-up included.
 * Prints, per configuration, the median wall time over the rounds and its spread, and the
 * medians of the per-round ratios to the original loop and to the floor (ratios within a
 * round share the machine's load of that moment), and whether every configuration gave
 * the same verdicts (original pass rule, SPEC 7).
 *
 *   npm run bench -- evaluation [--pset DIR] [--papers ID... | --preset debian9|all] [--python PATH]
 *       [--rounds R] [--repeat N] [--jobs N] [--sandbox auto|bwrap|uid|none] [--only original,cold,warm1,warmN,rcbrun,floor]
 *
 * `--preset all`: every paper of the pset whose oracle passes with --python (the environment
 * check `rcb doctor` makes, before the rounds, untimed); the papers left out are named.
 */
import { spawn } from 'node:child_process';
import { chmod, cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Candidate, RawExecution, TestExecutor } from '../core/executor';
import { DEFAULT_LIMITS } from '../core/executor';
import { OFFICIAL_MARKERS, officialPass } from '../core/judge';
import { originalBody } from '../core/prompt/mask';
import { candidateFor } from '../core/run/evaluate';
import { loadPset } from '../core/pset/read-pset';
import { createColdExecutor, createWarmExecutor } from '../adapters/executor';
import type { WarmTraceEvent } from '../adapters/executor/warm-executor';
import { parseSandboxMode, type SandboxMode } from '../adapters/executor/executor-options';
import { defaultJobs } from '../adapters/executor/executor-options';
import { sandboxEnvironment } from '../adapters/executor/environment';
import { checkEnvironment } from '../core/run/env-check';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';

/** Named sets of papers: `debian9` are the published papers whose tests run with Debian's packages. */
export const PAPER_PRESETS: Record<string, string[]> = {
  debian9: ['Diff-Transformer', 'DiffusionDPO', 'GPS', 'LEN', 'OptimalSteps', 'SISS', 'TabDiff', 'Tanh-Init', 'minp'],
};

const CONFIGS = ['original', 'cold', 'warm1', 'warmN', 'rcbrun', 'floor'] as const;

/** The preset that is no list: the papers of the pset that run with the interpreter. */
const ALL_RUNNABLE = 'all';
type Config = (typeof CONFIGS)[number];

interface EvaluationArgs {
  pset: string;
  python: string;
  papers?: string[];
  rounds: number;
  repeat: number;
  jobs: number;
  only: Set<Config>;
  /** The sandbox of rcb's configurations (the floor and the original loop have none). */
  sandbox: SandboxMode;
  /** `--preset all`: the pset's papers whose oracle passes with the interpreter. */
  allRunnable?: boolean;
}

function parseArgs(args: string[]): EvaluationArgs {
  const out: EvaluationArgs = {
    pset: resolve(__dirname, '..', 'examples', 'pset-mini'),
    python: '/usr/bin/python3',
    rounds: 3,
    repeat: 1,
    jobs: defaultJobs(),
    only: new Set(CONFIGS),
    sandbox: 'auto',
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
    else if (arg === '--rounds') out.rounds = Number(value());
    else if (arg === '--repeat') out.repeat = Number(value());
    else if (arg === '--jobs') out.jobs = Number(value());
    else if (arg === '--sandbox') out.sandbox = parseSandboxMode(value(), 'bench evaluation: --sandbox');
    else if (arg === '--preset') {
      const name = value();
      const papers = PAPER_PRESETS[name];
      if (name === ALL_RUNNABLE) out.allRunnable = true;
      else if (!papers) throw new Error(`bench evaluation: unknown preset ${name} (known: ${[...Object.keys(PAPER_PRESETS), ALL_RUNNABLE].join(', ')})`);
      else out.papers = papers;
    } else if (arg === '--only') {
      const names = value().split(',');
      const unknown = names.filter((n) => !(CONFIGS as readonly string[]).includes(n));
      if (unknown.length) throw new Error(`bench evaluation: --only takes ${CONFIGS.join(',')}; got ${unknown.join(',')}`);
      out.only = new Set(names as Config[]);
    } else if (arg === '--papers') {
      out.papers = [];
      while (i + 1 < args.length && !args[i + 1].startsWith('--')) out.papers.push(...args[++i].split(',').filter(Boolean));
    } else throw new Error(`bench evaluation: unknown argument ${arg}`);
  }
  for (const [name, v] of [
    ['--rounds', out.rounds],
    ['--repeat', out.repeat],
    ['--jobs', out.jobs],
  ] as const) {
    if (!(Number.isInteger(v) && v >= 1)) throw new Error(`bench evaluation: ${name} must be a positive integer`);
  }
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
async function originalOne(candidate: Candidate, python: string, env: Record<string, string>): Promise<boolean> {
  const dir = await mkdtemp(join(tmpdir(), 'rcb-bench-baseline-'));
  try {
    await cp(candidate.paperDir, dir, { recursive: true });
    await writeFile(join(dir, candidate.file), candidate.source);
    return await new Promise<boolean>((resolvePass) => {
      // detached: a session of its own, as every other configuration's tests have (see floor-harness.py).
      const child = spawn(python, ['paper2code_test.py'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let output = '';
      child.stdout.setEncoding('utf8');
      child.stderr.setEncoding('utf8');
      child.stdout.on('data', (c: string) => (output += c));
      child.stderr.on('data', (c: string) => (output += c));
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

/** Runs bench/floor-harness.py with one JSON job on stdin; its JSON answer. */
function floorHarness<T>(python: string, mode: 'run' | 'learn', job: object, env: Record<string, string>): Promise<T> {
  return new Promise<T>((resolveRun, reject) => {
    const child = spawn(python, [join(__dirname, 'floor-harness.py'), mode], { env, cwd: tmpdir(), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (c: string) => (out += c));
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString('utf8')).slice(-4000)));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`bench evaluation: floor harness ${mode} exited ${code}: ${err}`));
      else resolveRun(JSON.parse(out) as T);
    });
    child.stdin.end(JSON.stringify(job));
  });
}

const wire = (c: Candidate) => ({ dir: c.paperDir, file: c.file, source: c.source });

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = process.hrtime.bigint();
  const value = await run();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, value };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Verdicts (original pass rule) and, where known, each test's own time (start to exit), ms. */
interface Outcome {
  passes: boolean[];
  durationsMs?: number[];
  /** Why the tests that did not pass failed, when known (one line each). */
  failures?: string[];
  /** Where a warm executor's time went (see printBreakdown). */
  trace?: WarmTraceEvent[];
  /** The floor's start-up: its imports, before the first fork, ms. */
  startupMs?: number;
  /** The sandbox rcb's tests ran in (auto resolves to bwrap or uid). */
  sandbox?: string;
}

const outcomeOf = (raws: RawExecution[]): Outcome => {
  const passes = raws.map((r) => !r.infraError && officialPass(r));
  return {
    passes,
    sandbox: [...new Set(raws.map((r) => r.sandbox))].join('+'),
    durationsMs: raws.map((r) => r.durationMs),
    failures: raws
      .filter((_, i) => !passes[i])
      .map(
        (r) =>
          `${r.taskId}: ${
            r.infraError ??
            `exit ${r.exitCode}${r.killedFor ? `, killed for ${r.killedFor}` : ''}, markers ${r.markersSeen.join(',')}: ` +
              r.stderr.text.trim().split('\n').slice(-2).join(' / ').slice(0, 300)
          }`,
      ),
  };
};

/** Runs the candidates through an executor as `rcb run` does: told the papers first, so its workers start at once. */
async function throughExecutor(make: (trace: (event: WarmTraceEvent) => void) => Promise<TestExecutor>, candidates: Candidate[]): Promise<Outcome> {
  const trace: WarmTraceEvent[] = [];
  const executor = await make((event) => trace.push(event));
  try {
    executor.expectPapers?.([...new Set(candidates.map((c) => c.paperDir))]);
    return { ...outcomeOf(await executor.run(candidates)), trace };
  } finally {
    await executor.close();
  }
}

/** The papers of the pset whose oracle passes with the interpreter (the environment check of `rcb doctor`). */
async function runnablePapers(options: EvaluationArgs): Promise<string[]> {
  const pset = loadPset(options.pset, options.papers ? { papers: options.papers } : {});
  const executor = await createColdExecutor({ python: options.python, jobs: options.jobs, sandbox: options.sandbox, warn: () => undefined });
  try {
    const papers = await checkEnvironment({ executor }, { pset, interpreter: options.python });
    const left = papers.filter((p) => !p.runs);
    process.stdout.write(
      `preset all: ${papers.length - left.length} of ${papers.length} paper(s) run with ${options.python}` +
        (left.length ? `; left out: ${left.map((p) => `${p.paper} (${p.reason})`).join(', ')}` : '') +
        '\n',
    );
    return papers.filter((p) => p.runs).map((p) => p.paper);
  } finally {
    await executor.close();
  }
}

/** The built command line: `rcb run` as a user runs it; the sources through tsx when it is not built. */
const RCB_CLI = resolve(__dirname, '..', 'dist', 'bin', 'rcb.js');
const rcbCommand = (): { args: string[]; built: boolean } =>
  existsSync(RCB_CLI)
    ? { args: [RCB_CLI], built: true }
    : { args: ['-r', require.resolve('tsx/cjs'), resolve(__dirname, '..', 'bin', 'rcb.ts')], built: false };

/**
 * `rcb run --model oracle` over the papers, in a fresh run folder and cache folder (so its
 * environment check runs, as on a first run), timed from spawn to exit; the verdicts in
 * candidate order from its store (original pass rule).
 */
async function rcbRun(options: EvaluationArgs, papers: string[], candidates: Candidate[], tmpDir: string): Promise<Outcome> {
  const dir = await mkdtemp(join(tmpDir, 'rcbrun-'));
  try {
    const args = [
      ...rcbCommand().args,
      'run',
      '--pset',
      options.pset,
      '--papers',
      papers.join(','),
      '--model',
      'oracle',
      '--python',
      options.python,
      '--jobs',
      String(options.jobs),
      '--sandbox',
      options.sandbox,
      '--out',
      join(dir, 'run'),
    ];
    const code = await new Promise<number | null>((resolveRun, reject) => {
      const child = spawn(process.execPath, args, {
        env: { ...process.env, RCB_CACHE_DIR: join(dir, 'cache'), CI: 'true' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err = (err + c.toString('utf8')).slice(-4000)));
      child.on('error', reject);
      child.on('close', (c) => (c === 0 ? resolveRun(c) : reject(new Error(`bench evaluation: rcb run exited ${c}: ${err}`))));
    });
    void code;
    const db = new Database(join(dir, 'run', 'rcb.sqlite'), { readonly: true });
    const rows = db.prepare('SELECT t.paper, t.file, t.snippet, v.record FROM verdicts v JOIN tasks t USING (run_id, task_id)').all() as {
      paper: string;
      file: string;
      snippet: string;
      record: string;
    }[];
    db.close();
    const pass = new Map(rows.map((r) => [`${r.paper}/${r.file}/${r.snippet}`, (JSON.parse(r.record) as { officialPass: boolean }).officialPass]));
    const sandbox = JSON.parse(rows[0]?.record ?? '{}').sandbox as string | undefined;
    return { passes: candidates.map((c) => pass.get(c.taskId.replace(/#\d+$/, '')) === true), ...(sandbox ? { sandbox } : {}) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function benchEvaluation(args: string[]): Promise<void> {
  const options = parseArgs(args);
  if (options.allRunnable) options.papers = await runnablePapers(options);
  if (options.only.has('rcbrun')) {
    if (options.repeat !== 1) throw new Error('bench evaluation: rcbrun runs each task once: use --repeat 1 with it (or --only without rcbrun)');
    if (!rcbCommand().built) process.stdout.write(`rcbrun: ${RCB_CLI} is not built, so rcb runs through tsx (slower than a user's; npm run build first)\n`);
  }
  const candidates = oracleCandidates(options.pset, options.papers, options.repeat);
  const env = sandboxEnvironment();
  const quiet = (): void => undefined;
  const { jobs, python, sandbox } = options;
  process.stdout.write(
    `evaluation bench: ${candidates.length} oracle candidates from ${options.pset}` +
      `${options.papers ? ` (papers ${options.papers.join(', ')})` : ''}, python ${python}, ` +
      `${cpus().length} cores, jobs N = ${jobs}, rcb's sandbox ${sandbox}, ${options.rounds} round(s)\n`,
  );

  // The executors' run directories in a folder of the bench's own, out of other rcb
  // processes' way (run-dir.ts now leaves owners of other pid namespaces alone too).
  const tmpDir = await mkdtemp(join(tmpdir(), 'rcb-bench-'));
  await chmod(tmpDir, 0o711);
  let floorModules: string[] = [];
  if (options.only.has('floor')) {
    // What the papers' tests import, learned from one oracle run per paper (not timed:
    // the floor is given this knowledge).
    const firstPerPaper = [...new Map(candidates.map((c) => [c.paper, c])).values()];
    floorModules = (await floorHarness<{ modules: string[] }>(python, 'learn', { candidates: firstPerPaper.map(wire) }, env)).modules;
    process.stdout.write(`floor preloads ${floorModules.length} modules learned from one test per paper\n`);
  }

  const runs: Record<Config, () => Promise<Outcome>> = {
    original: async () => {
      const passes: boolean[] = [];
      for (const c of candidates) passes.push(await originalOne(c, python, env));
      return { passes };
    },
    cold: () => throughExecutor(() => createColdExecutor({ python, jobs, tmpDir, sandbox, warn: quiet }), candidates),
    warm1: () => throughExecutor((trace) => createWarmExecutor({ python, jobs: 1, tmpDir, sandbox, warn: quiet, trace }), candidates),
    warmN: () => throughExecutor((trace) => createWarmExecutor({ python, jobs, tmpDir, sandbox, warn: quiet, trace }), candidates),
    rcbrun: () => rcbRun(options, [...new Set(candidates.map((c) => c.paper))], candidates, tmpDir),
    floor: () =>
      floorHarness<Outcome>(python, 'run', { preload: floorModules, jobs, timeoutSec: DEFAULT_LIMITS.timeoutSec, candidates: candidates.map(wire) }, env),
  };
  const label: Record<Config, string> = {
    original: 'original loop (copy, splice, cold python, 1 at a time)',
    cold: `rcb cold, SANDBOX, ${jobs} job(s)`,
    warm1: 'rcb warm, SANDBOX, 1 job',
    warmN: `rcb warm, SANDBOX, ${jobs} job(s)`,
    rcbrun: `whole rcb run --model oracle${rcbCommand().built ? '' : ' (tsx)'}, SANDBOX, ${jobs} job(s)`,
    floor: `floor (preload all, fork per test, ${jobs} at a time)`,
  };

  const configs = CONFIGS.filter((c) => options.only.has(c));
  const times = new Map<Config, number[]>(configs.map((c) => [c, []]));
  const verdicts = new Map<Config, boolean[]>();
  const durations = new Map<Config, number[][]>(configs.map((c) => [c, candidates.map(() => [])]));
  const traces = new Map<Config, WarmTraceEvent[][]>(configs.map((c) => [c, []]));
  const floorStartups: number[] = [];
  let same = true;
  for (let round = 0; round < options.rounds; round++) {
    // A different order each round, so no configuration always runs first (or last).
    const order = configs.map((_, i) => configs[(i + round) % configs.length]);
    const line: string[] = [];
    for (const config of order) {
      const { ms, value: outcome } = await timed(runs[config]);
      const value = outcome.passes;
      times.get(config)!.push(ms);
      outcome.durationsMs?.forEach((d, i) => durations.get(config)![i].push(d));
      // Only the warm executor traces (the cold one takes no trace option).
      if (outcome.trace?.length) traces.get(config)!.push(outcome.trace);
      if (outcome.startupMs !== undefined) floorStartups.push(outcome.startupMs);
      if (outcome.sandbox) label[config] = label[config].replace('SANDBOX', outcome.sandbox);
      const first = verdicts.get(config) ?? [...verdicts.values()][0];
      if (first && first.some((p, i) => p !== value[i])) same = false;
      verdicts.set(config, value);
      line.push(`${config} ${(ms / 1000).toFixed(1)} s (${value.filter(Boolean).length}/${value.length})`);
      for (const failure of (outcome.failures ?? []).slice(0, 5)) process.stdout.write(`  ${config} failed ${failure}\n`);
    }
    process.stdout.write(`round ${round + 1}: ${line.join(', ')}\n`);
  }

  const perRoundRatio = (config: Config, to: Config): number | null => {
    const a = times.get(to);
    const b = times.get(config);
    return a && b ? median(a.map((t, i) => t / b[i])) : null;
  };
  const fmt = (x: number | null, suffix = 'x'): string => (x === null ? '-' : `${x.toFixed(2)}${suffix}`);
  process.stdout.write(`\n| configuration | wall median (s) | spread min-max (s) | original / it | it / floor | pass |\n|---|---|---|---|---|---|\n`);
  for (const config of configs) {
    const t = times.get(config)!;
    const originalOver = perRoundRatio(config, 'original');
    const overFloor = times.has('floor') ? median(t.map((x, i) => x / times.get('floor')![i])) : null;
    const passed = verdicts.get(config)!;
    process.stdout.write(
      `| ${label[config]} | ${(median(t) / 1000).toFixed(1)} | ${(Math.min(...t) / 1000).toFixed(1)}-${(Math.max(...t) / 1000).toFixed(1)} | ` +
        `${fmt(originalOver)} | ${fmt(overFloor)} | ${passed.filter(Boolean).length}/${passed.length} |\n`,
    );
  }
  process.stdout.write(`ratios: medians of the per-round ratios; verdicts identical across configurations and rounds: ${same ? 'yes' : 'NO'}\n`);
  printPerPaper(candidates, configs, durations, times, (config) => (config === 'warm1' || config === 'original' ? 1 : jobs));
  printBreakdown(configs, traces, times, floorStartups);
  await rm(tmpDir, { recursive: true, force: true });
  if (!same) process.exitCode = 1;
}

/**
 * Per paper, the median time of one test from its start to its exit (all rounds pooled),
 * for the configurations that know it, and per configuration the wall time per test
 * beyond that (start-up, hand-off, workspace, waiting for a slot), to see what is left
 * above the floor and where.
 */
function printPerPaper(
  candidates: Candidate[],
  configs: Config[],
  durations: Map<Config, number[][]>,
  times: Map<Config, number[]>,
  jobsOf: (config: Config) => number,
): void {
  const known = configs.filter((c) => durations.get(c)!.every((d) => d.length > 0));
  if (!known.length) return;
  const papers = [...new Set(candidates.map((c) => c.paper))];
  process.stdout.write(
    `\nper test, start to exit, median ms (all rounds)\n| paper | tests | ${known.join(' | ')} |\n|---|---|${known.map(() => '---|').join('')}\n`,
  );
  for (const paper of papers) {
    const indexes = candidates.flatMap((c, i) => (c.paper === paper ? [i] : []));
    const cells = known.map((config) => median(indexes.flatMap((i) => durations.get(config)![i])).toFixed(0));
    process.stdout.write(`| ${paper} | ${indexes.length} | ${cells.join(' | ')} |\n`);
  }
  const line = known.map((config) => {
    const inTests = median(candidates.map((_, i) => median(durations.get(config)![i])));
    const sum = candidates.reduce((n, _, i) => n + median(durations.get(config)![i]), 0);
    const wall = median(times.get(config)!);
    // What the slots spent outside the tests themselves: start-up, hand-off, workspaces.
    const outside = (wall * jobsOf(config) - sum) / candidates.length;
    return (
      `${config}: sum of tests ${(sum / 1000).toFixed(1)} s, wall ${(wall / 1000).toFixed(1)} s, median test ${inTests.toFixed(0)} ms, ` +
      `slot time outside tests ${outside.toFixed(0)} ms per test (start-up included)`
    );
  });
  process.stdout.write(`${line.join('\n')}\n`);
}

/**
 * Where the warm configurations' wall time went, medians over the rounds: the host's
 * set-up, the workers' start (spawn to hello, their imports), the first test's start, and
 * per test each step around the test process (workspace fill, the server's fork, relay and
 * checks, rcb's tamper check, the clean-up), against the floor's own start-up.
 */
function printBreakdown(configs: Config[], traces: Map<Config, WarmTraceEvent[][]>, times: Map<Config, number[]>, floorStartups: number[]): void {
  const warm = configs.filter((c) => traces.get(c)!.length > 0);
  if (!warm.length && !floorStartups.length) return;
  process.stdout.write(`\nwhere the time goes, medians over the rounds (ms)\n`);
  if (floorStartups.length) process.stdout.write(`floor: start-up (imports before the first fork) ${median(floorStartups).toFixed(0)}\n`);
  const ms = (x: number): string => x.toFixed(0);
  for (const config of warm) {
    const rounds = traces.get(config)!;
    const of = <K extends WarmTraceEvent['kind']>(events: WarmTraceEvent[], kind: K) =>
      events.filter((e): e is Extract<WarmTraceEvent, { kind: K }> => e.kind === kind);
    const perRound = (f: (events: WarmTraceEvent[]) => number): number => median(rounds.map(f));
    const tests = rounds.map((events) => of(events, 'test'));
    const perTest = (f: (t: Extract<WarmTraceEvent, { kind: 'test' }>) => number): string =>
      ms(median(tests.map((round) => round.reduce((n, t) => n + f(t), 0) / Math.max(1, round.length))));
    const setup = perRound((events) => of(events, 'setup')[0]?.at ?? 0);
    const workerStart = perRound((events) => median(of(events, 'worker').map((w) => w.readyAt - w.spawnedAt)));
    const inServer = (part: 'server' | 'preload' | 'index'): number => perRound((events) => median(of(events, 'worker').map((w) => w.startMs?.[part] ?? 0)));
    const lastReady = perRound((events) => Math.max(...of(events, 'worker').map((w) => w.readyAt)));
    const firstTest = perRound((events) => Math.min(...of(events, 'test').map((t) => t.startedAt + t.workerMs + t.fillMs)));
    const restarts = perRound((events) => of(events, 'worker').length);
    process.stdout.write(
      `${config}: wall ${ms(median(times.get(config)!))}; host set-up done at ${ms(setup)}, worker start ${ms(workerStart)} each ` +
        `(sandbox and interpreter start ${ms(workerStart - inServer('server') - inServer('preload') - inServer('index'))}, server imports ${ms(inServer('server'))}, ` +
        `preload ${ms(inServer('preload'))}, index and gc ${ms(inServer('index'))}; ` +
        `${restarts} started, last ready at ${ms(lastReady)}), first test at ${ms(firstTest)}; per test: ` +
        `test process ${perTest((t) => t.testMs)}, around it in the server (fork, relay, checks) ${perTest((t) => t.runMs - t.testMs)}, ` +
        `workspace fill ${perTest((t) => t.fillMs)}, tamper check ${perTest((t) => t.checkMs)}, clean-up ${perTest((t) => t.cleanMs)}, ` +
        `waiting for a worker ${perTest((t) => t.workerMs)}\n`,
    );
  }
}

if (require.main === module) {
  benchEvaluation(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
