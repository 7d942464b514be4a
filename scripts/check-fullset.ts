/**
 * `npm run check:fullset [-- --pset DIR] [--out DIR] [--jobs N]`: the 20-paper check CI does
 * not run (a fresh `rcb env install` takes longer than CI's budget; docs/paper-environment.md,
 * "Figures"). With the papers' environment (installed here first; a second install returns
 * at once):
 *   1. `rcb doctor --pset DIR --json`: which papers run, and why the others do not;
 *   2. one `rcb run` over every task with `--model oracle --model empty`;
 *   3. every snippet of every runnable paper: the oracle passes strict, the empty answer does
 *      not. Any snippet otherwise, or a runnable paper without verdicts, fails the check.
 * The pset is --pset, else $RCB_REAL_PSET, else ../shared/data/researchcodebench/pset.
 * Exit 0 when the check holds, 1 otherwise.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { packageRoot } from '../core/util/package-root';

interface Options {
  pset: string;
  out: string | undefined;
  jobs: string | undefined;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = {
    pset: process.env.RCB_REAL_PSET || join(packageRoot(), '..', 'shared', 'data', 'researchcodebench', 'pset'),
    out: undefined,
    jobs: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const v = argv[++i];
    if (v === undefined) throw new Error(`check:fullset: ${flag} needs a value`);
    if (flag === '--pset') opts.pset = v;
    else if (flag === '--out') opts.out = v;
    else if (flag === '--jobs') opts.jobs = v;
    else throw new Error(`check:fullset: unknown flag ${flag}`);
  }
  opts.pset = resolve(opts.pset);
  if (!existsSync(join(opts.pset, 'papers.yaml')))
    throw new Error(`check:fullset: no pset at ${opts.pset} (pass --pset or set RCB_REAL_PSET to the pset/ folder of PatrickHua/ResearchCodeBench)`);
  return opts;
}

const t0 = Date.now();
function say(message: string): void {
  process.stderr.write(`[check:fullset ${((Date.now() - t0) / 1000).toFixed(0).padStart(5)}s] ${message}\n`);
}

/** rcb through tsx, its stderr passed through; throws naming the command when it fails unexpectedly. */
function rcb(args: string[], okCodes: number[] = [0]): string {
  const r = spawnSync(process.execPath, ['-r', require.resolve('tsx/cjs'), join(packageRoot(), 'bin', 'rcb.ts'), ...args], {
    encoding: 'utf8',
    cwd: packageRoot(),
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status === null || !okCodes.includes(r.status)) throw new Error(`check:fullset: rcb ${args.join(' ')} exited ${r.status ?? r.signal}`);
  return r.stdout;
}

interface Row {
  paper: string;
  model: string;
  snippet: string;
  strict: boolean | null;
}

/** Per runnable paper: the snippets where oracle did not pass strict or empty did. */
export function checkVerdicts(rows: Row[], runnable: string[]): { paper: string; snippets: number; wrong: string[] }[] {
  return runnable.map((paper) => {
    const mine = rows.filter((r) => r.paper === paper);
    const wrong = mine
      .filter((r) => (r.model === 'oracle' ? r.strict !== true : r.model === 'empty' ? r.strict !== false : false))
      .map((r) => `${r.model}/${r.snippet}: ${r.strict === null ? 'no verdict' : r.strict ? 'passes' : 'fails'}`);
    const snippets = mine.filter((r) => r.model === 'oracle').length;
    if (snippets === 0) wrong.push('no oracle task');
    return { paper, snippets, wrong };
  });
}

function main(): number {
  const opts = parseArgs(process.argv.slice(2));
  say('rcb env install');
  const python = rcb(['env', 'install']).trim().split('\n').pop()!;
  const tEnv = Date.now();
  say(`python ${python}; rcb doctor --pset ${opts.pset}`);
  const doctor = JSON.parse(rcb(['doctor', '--pset', opts.pset, '--python', python, '--json'], [0, 1])) as {
    paper: string;
    runs: boolean;
    reason: string | null;
    note: string | null;
  }[];
  const runnable = doctor.filter((p) => p.runs).map((p) => p.paper);
  const tDoctor = Date.now();
  const out = resolve(opts.out ?? join(mkdtempSync(join(tmpdir(), 'rcb-fullset-')), 'run'));
  say(`rcb run over every task (oracle, empty) into ${out}`);
  rcb(['run', '--pset', opts.pset, '--python', python, '--model', 'oracle', '--model', 'empty', '--out', out, ...(opts.jobs ? ['--jobs', opts.jobs] : [])]);
  const tRun = Date.now();

  const db = new Database(join(out, 'rcb.sqlite'), { readonly: true });
  const rows = (
    db
      .prepare(
        'SELECT t.paper AS paper, t.model AS model, t.file AS file, t.snippet AS snippet, v.record AS record FROM tasks t LEFT JOIN verdicts v ON v.task_id = t.task_id',
      )
      .all() as { paper: string; model: string; file: string; snippet: string; record: string | null }[]
  ).map((r) => ({
    paper: r.paper,
    model: r.model,
    snippet: `${r.file}:${r.snippet}`,
    strict: r.record ? (JSON.parse(r.record) as { strictPass: boolean }).strictPass : null,
  }));
  db.close();
  const tasks = rows.filter((r) => r.model === 'oracle').length;
  const results = checkVerdicts(rows, runnable);
  for (const p of doctor) {
    const r = results.find((x) => x.paper === p.paper);
    process.stdout.write(
      r
        ? `${p.paper.padEnd(30)} runnable  ${String(r.snippets).padStart(3)} snippets  ${r.wrong.length ? `WRONG: ${r.wrong.join('; ')}` : 'oracle 100% strict, empty 0%'}\n`
        : `${p.paper.padEnd(30)} not runnable: ${p.note ? `${p.note} (${p.reason})` : p.reason}\n`,
    );
  }
  const snippets = results.reduce((n, r) => n + r.snippets, 0);
  const bad = results.filter((r) => r.wrong.length);
  const s = (a: number, b: number) => ((b - a) / 1000).toFixed(0);
  process.stdout.write(
    `${runnable.length}/${doctor.length} papers runnable, ${snippets}/${tasks} snippets checked; ${bad.length ? `${bad.length} paper(s) WRONG` : 'all as expected'}\n` +
      `times: env ${s(t0, tEnv)} s, doctor ${s(tEnv, tDoctor)} s, run ${s(tDoctor, tRun)} s; run folder ${out}\n`,
  );
  return bad.length ? 1 : 0;
}

if (require.main === module) {
  try {
    process.exit(main());
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  }
}
