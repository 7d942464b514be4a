/** `rcb runs [DIR]`: the run directories under DIR (default ./runs) with their spec, status and scores. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { scoreStoredRun, splitRunnable } from '../../core/scoring';
import { defaultJudge } from '../../core/report/build-report';
import { loadRun } from '../../core/report/loaded-run';
import { openRunDir, runIdIn, UsageError } from './common';

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
}

function isRunDir(dir: string): boolean {
  return existsSync(join(dir, 'rcb.sqlite')) && runIdIn(dir) !== null;
}

export async function listRuns(root: string): Promise<RunListing[]> {
  const dirs = isRunDir(root)
    ? [root]
    : readdirSync(root)
        .map((n) => join(root, n))
        .filter((d) => statSync(d).isDirectory() && isRunDir(d));
  const out: RunListing[] = [];
  for (const dir of dirs) {
    const { store, runId } = openRunDir(dir, false);
    try {
      const loaded = await loadRun(store, runId!);
      const { run } = loaded;
      const judge = defaultJudge(run, 'table');
      const report = scoreStoredRun(run, loaded.tasks, loaded.verdicts, judge, 'all');
      const { runnable, envBroken } = splitRunnable(run, loaded.tasks);
      out.push({
        dir,
        runId: run.runId,
        status: run.status,
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
      });
    } finally {
      await store.close();
    }
  }
  return out.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}

export async function runsCommand(dir: string | undefined, opts: { json?: boolean }): Promise<number> {
  const root = resolve(dir ?? 'runs');
  if (!existsSync(root)) throw new UsageError(`${root} does not exist (run directories are made by \`rcb run\`, under ./runs by default)`);
  const runs = await listRuns(root);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`);
    return 0;
  }
  if (!runs.length) {
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
        `  scaled pass@1 % (${r.judge}): ${scores || '-'}\n`,
    );
  }
  return 0;
}
