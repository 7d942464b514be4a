/** `rcb runs [DIR]`: the run directories under DIR (default ./runs) with their spec, status and scores. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { scoreStoredRun, splitRunnable } from '../../core/scoring';
import { defaultJudge } from '../../core/report/build-report';
import { loadRun } from '../../core/report/loaded-run';
import { StoreFileError } from '../../adapters/local/sqlite-store';
import { openRunDir, runIdIn, UsageError } from './common';
import { runOwnerAlive } from '../../app/run-owner';
import { shownStatus, type PartialRun } from '../../core/report/partial-run';

export interface RunListing {
  dir: string;
  runId: string;
  status: string;
  createdAt: string;
  models: string[];
  samples: number;
  papers: number;
  withPaper: boolean;
  judge: string;
  /** Scaled pass@1 per model, percent, over all papers; null when no task is in scope. */
  scores: Record<string, number | null>;
  /** Its 95% bootstrap interval. */
  intervals: Record<string, { low: number; high: number } | null>;
  /** Verdicts and tasks of the papers that run here (env_broken ones are counted apart). */
  judged: number;
  tasks: number;
  /** Task samples of papers that cannot run in the run's environment: out of the scores and the counts above. */
  envBroken: number;
  envBrokenPapers: string[];
  /** The score's notes (untested and env_broken tasks). */
  notes: string[];
  /** A run that did not finish: its scores are over its judged tasks only (core/report/partial-run.ts). */
  partial: PartialRun | null;
}

/** A folder that has a run store but cannot be read as a run: listed with why, the others still listed. */
export interface DamagedListing {
  dir: string;
  damaged: string;
}

function isRunDir(dir: string): boolean {
  return existsSync(join(dir, 'rcb.sqlite'));
}

/** The reason a run directory cannot be read, from the errors reading it throws; others are rethrown. */
function damageOf(e: unknown): string {
  if (e instanceof StoreFileError) return e.message;
  if (e instanceof UsageError) return e.message;
  throw e;
}

/** The readable runs under `root`, newest first. */
export async function listRuns(root: string): Promise<RunListing[]> {
  return (await listRunDirs(root)).runs;
}

/** The runs under `root`, newest first, and apart the folders with a store that cannot be read as a run. */
export async function listRunDirs(root: string): Promise<{ runs: RunListing[]; damaged: DamagedListing[] }> {
  const dirs = isRunDir(root)
    ? [root]
    : readdirSync(root)
        .map((n) => join(root, n))
        .filter((d) => statSync(d).isDirectory() && isRunDir(d));
  const out: RunListing[] = [];
  const damaged: DamagedListing[] = [];
  for (const dir of dirs) {
    try {
      const listing = await listRun(dir);
      if ('damaged' in listing) damaged.push(listing);
      else out.push(listing);
    } catch (e) {
      damaged.push({ dir, damaged: damageOf(e) });
    }
  }
  return { runs: out.sort((a, b) => b.createdAt.localeCompare(a.createdAt)), damaged: damaged.sort((a, b) => a.dir.localeCompare(b.dir)) };
}

async function listRun(dir: string): Promise<RunListing | DamagedListing> {
  const runId = runIdIn(dir);
  if (runId === null) return { dir, damaged: `${join(dir, 'run.json')} is missing: the folder has a run store but names no run` };
  const { store } = openRunDir(dir, false);
  try {
    const run = await store.getRun(runId);
    if (!run) return { dir, damaged: `${join(dir, 'rcb.sqlite')} holds no run ${runId} (the run ${join(dir, 'run.json')} names)` };
    const loaded = await loadRun(store, runId);
    const judge = defaultJudge(run, 'table');
    const status = shownStatus(run.status, runOwnerAlive(dir));
    const report = scoreStoredRun(run, loaded.tasks, loaded.verdicts, judge, 'all', undefined, status);
    const { runnable, envBroken } = splitRunnable(run, loaded.tasks);
    return {
      dir,
      runId: run.runId,
      status,
      partial: report.partial ?? null,
      createdAt: run.createdAt,
      models: run.spec.models.map((m) => m.id),
      samples: run.spec.samples,
      papers: run.papers.length,
      withPaper: run.spec.withPaper,
      judge,
      scores: Object.fromEntries(report.models.map((m) => [m.model, m.tasks ? m.scaled.mean : null])),
      intervals: Object.fromEntries(report.models.map((m) => [m.model, m.scaled.ci])),
      judged: runnable.filter((t) => loaded.verdicts.has(t.taskId)).length,
      tasks: runnable.length,
      envBroken: envBroken.length,
      envBrokenPapers: [...new Set(envBroken.map((t) => t.paper))].sort(),
      notes: report.notes,
    };
  } finally {
    await store.close();
  }
}

export async function runsCommand(dir: string | undefined, opts: { json?: boolean }): Promise<number> {
  const root = resolve(dir ?? 'runs');
  if (!existsSync(root)) throw new UsageError(`${root} does not exist (run directories are made by \`rcb run\`, under ./runs by default)`);
  const { runs, damaged } = await listRunDirs(root);
  if (opts.json) {
    // The damaged folders last, each {dir, damaged}: a reader tells them apart by the `damaged` key.
    process.stdout.write(`${JSON.stringify([...runs, ...damaged], null, 2)}\n`);
    return 0;
  }
  if (!runs.length && !damaged.length) {
    process.stderr.write(`no run directory in ${root}\n`);
    return 0;
  }
  for (const r of runs) {
    const scores = Object.entries(r.scores)
      .map(([m, s]) => {
        const ci = r.intervals[m];
        return `${m} ${s === null ? 'n/a' : s.toFixed(2)}${ci ? ` [${ci.low.toFixed(2)}, ${ci.high.toFixed(2)}]` : ''}`;
      })
      .join(', ');
    process.stdout.write(
      `${relative(process.cwd(), r.dir) || '.'}  run ${r.runId}  ${r.status}  ${r.createdAt.slice(0, 16).replace('T', ' ')}\n` +
        `  ${r.papers} paper(s), ${r.samples} sample(s)${r.withPaper ? '' : ', no paper'}; judged ${r.judged}/${r.tasks}` +
        (r.envBroken ? `; env_broken ${r.envBroken} (${r.envBrokenPapers.join(', ')}: cannot run here, not scored)` : '') +
        '\n' +
        `  scaled pass@1 % (${r.judge}${r.partial ? `, partial: over the ${r.partial.judged} judged of ${r.partial.judged + r.partial.pending}, not final` : ''}): ${scores || '-'}\n`,
    );
  }
  for (const d of damaged) process.stdout.write(`${relative(process.cwd(), d.dir) || '.'}  DAMAGED  ${d.damaged}\n`);
  if (damaged.length) {
    const all = runs.length + damaged.length;
    process.stderr.write(`${damaged.length} of ${all} run director${all === 1 ? 'y' : 'ies'} could not be read (marked DAMAGED)\n`);
  }
  return 0;
}
