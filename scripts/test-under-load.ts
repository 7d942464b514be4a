/**
 * `npm run test:under-load [-- --runs N] [--neighbours N] [--max-minutes M] [-- JEST ARGS]`
 *
 * The whole test suite (jest, as `npm test` runs it after its type checks) while a CPU-bound
 * neighbour spins on every core: what a contributor's laptop looks like beside a build, a
 * browser or a second suite. `--runs N` runs it N times in a row and stops at the first red
 * run. Prints each run's time, the CPU time the suite used (its floor on quiet cores is that
 * divided by their number) and the CPU time the neighbours took meanwhile (the proof they
 * competed), and writes jest's per-file report of each run (`--json`) beside its log under
 * RCB_UNDER_LOAD_DIR (default a new temp folder).
 *
 * The neighbours are this script's own: started here, each in a process group of its own,
 * and stopped here by that group's id once the runs are over, on an error, or on Ctrl-C. Each
 * is also bounded by itself, so that none can outlive the script even if it is SIGKILLed:
 * it exits when its parent is gone and after --max-minutes x runs at the latest.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

interface Options {
  runs: number;
  neighbours: number;
  maxMinutes: number;
  jestArgs: string[];
}

const USAGE = 'usage: npm run test:under-load [-- --runs N] [--neighbours N] [--max-minutes M] [-- JEST ARGS]';

function parseArgs(argv: string[]): Options {
  const options: Options = { runs: 1, neighbours: availableParallelism(), maxMinutes: 60, jestArgs: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      options.jestArgs = argv.slice(i + 1);
      break;
    }
    const value = argv[i + 1];
    const count = (name: string, min: number): number => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < min) throw new Error(`${name} takes a whole number of at least ${min}, got ${value ?? 'nothing'}\n${USAGE}`);
      i++;
      return n;
    };
    if (arg === '--runs') options.runs = count('--runs', 1);
    else if (arg === '--neighbours') options.neighbours = count('--neighbours', 0);
    else if (arg === '--max-minutes') options.maxMinutes = count('--max-minutes', 1);
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  return options;
}

/**
 * A neighbour: spins until its parent (this script) is gone or its deadline passes, looking
 * up from the loop every few milliseconds. Plain JavaScript, so that nothing is compiled.
 */
const NEIGHBOUR = `
const parent = Number(process.argv[1]);
const deadline = Number(process.argv[2]);
let x = 0;
for (;;) {
  for (let i = 0; i < 2e6; i++) x = (x * 31 + i) % 1000003;
  if (process.ppid !== parent || Date.now() > deadline) process.exit(0);
}
`;

interface Neighbour {
  child: ChildProcess;
  exited: Promise<void>;
}

function startNeighbour(deadline: number): Neighbour {
  // detached: a process group of its own, whose id is its pid, to stop it and nothing else.
  const child = spawn(process.execPath, ['-e', NEIGHBOUR, String(process.pid), String(deadline)], { detached: true, stdio: 'ignore' });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return { child, exited };
}

/** Fields of a process's /proc stat after its command name (field 3 of stat is index 0); null once it is gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux). */
const TICKS = 100;

/** CPU seconds a process has used (user + system, stat fields 14 and 15); 0 once it is gone. */
function cpuSeconds(pid: number): number {
  const f = statFields(pid);
  return f ? (Number(f[11]) + Number(f[12])) / TICKS : 0;
}

/**
 * CPU seconds of a process and of every child it has waited for (fields 14 to 17), plus
 * those of its live children (jest's workers) and what they waited for: jest's run so far.
 */
function treeCpuSeconds(pid: number): number {
  const own = (p: number): number => {
    const f = statFields(p);
    return f ? (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / TICKS : 0;
  };
  let total = own(pid);
  try {
    for (const child of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) total += own(Number(child));
  } catch {
    // Gone meanwhile.
  }
  return total;
}

async function stopNeighbours(neighbours: Neighbour[]): Promise<void> {
  for (const n of neighbours) {
    if (n.child.exitCode !== null || n.child.signalCode !== null || n.child.pid === undefined) continue;
    try {
      process.kill(-n.child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await Promise.all(neighbours.map((n) => n.exited));
}

interface RunResult {
  ok: boolean;
  seconds: number;
  neighbourCpuSeconds: number;
  /** CPU seconds jest and everything it ran used (sampled every 2 s while it ran). */
  suiteCpuSeconds: number;
  log: string;
  report: string;
}

function runSuite(index: number, dir: string, jestArgs: string[], neighbours: Neighbour[]): Promise<RunResult> {
  const log = join(dir, `run-${index}.log`);
  const report = join(dir, `run-${index}.json`);
  const cpuBefore = neighbours.reduce((s, n) => s + cpuSeconds(n.child.pid!), 0);
  const started = Date.now();
  const jest = join(resolve(__dirname, '..'), 'node_modules', 'jest', 'bin', 'jest.js');
  const child = spawn(process.execPath, [jest, '--json', '--outputFile', report, ...jestArgs], {
    cwd: resolve(__dirname, '..'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: Buffer[] = [];
  const keep = (d: Buffer): void => {
    chunks.push(d);
    process.stderr.write(d);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let suiteCpuSeconds = 0;
  const sample = setInterval(() => {
    suiteCpuSeconds = Math.max(suiteCpuSeconds, treeCpuSeconds(child.pid!));
  }, 2000);
  return new Promise((done) => {
    child.once('close', (code) => {
      clearInterval(sample);
      writeFileSync(log, Buffer.concat(chunks));
      const neighbourCpuSeconds = neighbours.reduce((s, n) => s + cpuSeconds(n.child.pid!), 0) - cpuBefore;
      done({ ok: code === 0, seconds: (Date.now() - started) / 1000, neighbourCpuSeconds, suiteCpuSeconds, log, report });
    });
  });
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const dir = process.env.RCB_UNDER_LOAD_DIR ? resolve(process.env.RCB_UNDER_LOAD_DIR) : mkdtempSync(join(tmpdir(), 'rcb-under-load-'));
  mkdirSync(dir, { recursive: true });
  const deadline = Date.now() + options.runs * options.maxMinutes * 60_000;
  const neighbours = Array.from({ length: options.neighbours }, () => startNeighbour(deadline));
  const stop = (): void => {
    void stopNeighbours(neighbours).then(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const say = (line: string): void => void process.stdout.write(`test:under-load: ${line}\n`);
  say(
    `${options.neighbours} CPU-bound neighbour(s) (pids ${neighbours.map((n) => n.child.pid).join(', ')}) on ${availableParallelism()} core(s); ${options.runs} run(s); logs and reports in ${dir}`,
  );
  const results: RunResult[] = [];
  try {
    for (let i = 1; i <= options.runs; i++) {
      say(`run ${i}/${options.runs} started`);
      const r = await runSuite(i, dir, options.jestArgs, neighbours);
      results.push(r);
      say(
        `run ${i}/${options.runs} ${r.ok ? 'passed' : 'FAILED'} in ${r.seconds.toFixed(0)} s; the suite used ${r.suiteCpuSeconds.toFixed(0)} CPU s, the neighbours ${r.neighbourCpuSeconds.toFixed(0)} (${r.log})`,
      );
      if (!r.ok) break;
    }
  } finally {
    await stopNeighbours(neighbours);
  }
  const passed = results.filter((r) => r.ok).length;
  say(`${passed} of ${options.runs} run(s) passed in a row: ${results.map((r) => `${r.seconds.toFixed(0)} s`).join(', ')}`);
  return passed === options.runs ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`test:under-load: ${err.message}\n`);
    process.exit(2);
  },
);
