/** `rcb runs [DIR]`: the run directories under DIR (default ./runs) with their spec, status and scores. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { scoreRun } from '../../core/scoring';
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
  judged: number;
  tasks: number;
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
      const cutoffs = Object.fromEntries(Object.entries(run.models).map(([id, m]) => [id, m.knowledgeCutoff]));
      const report = scoreRun({ tasks: loaded.tasks, verdicts: loaded.verdicts, papers: run.papers, judge, subset: 'all', cutoffs });
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
        judged: loaded.verdicts.size,
        tasks: loaded.tasks.length,
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
    process.stdout.write(JSON.stringify(runs, null, 2) + '\n');
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
        `  ${r.papers} paper(s), ${r.samples} sample(s)${r.withPaper ? '' : ', no paper'}; judged ${r.judged}/${r.tasks}\n` +
        `  scaled pass@1 % (${r.judge}): ${scores || '-'}\n`,
    );
  }
  return 0;
}
