/**
 * Partial is never final: a run stopped by Ctrl-C (cancelled), by a closed pipe (SIGPIPE:
 * its output's reader went away) or by kill -9 is labelled so in `rcb runs` and every report
 * format, with judged and pending counts, and scored over its judged tasks only; a run whose
 * process is gone reads `interrupted`, not `evaluating`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { rcb, rcbCommand, REPO, tempDir } from '../helpers/cli';

jest.setTimeout(300_000);

/** Verdicts in the run's store so far (0 before it exists). */
function verdicts(dir: string): number {
  if (!existsSync(join(dir, 'rcb.sqlite'))) return 0;
  try {
    const db = new Database(join(dir, 'rcb.sqlite'), { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM verdicts').get() as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/** `rcb run` of the bundled example, one test at a time, stopped by `stop` once a verdict is stored; resolves when it has exited. */
async function stoppedRun(dir: string, stop: (child: ChildProcess) => void, extra: string[] = []): Promise<void> {
  const [cmd, ...args] = rcbCommand();
  const child = spawn(cmd, [...args, 'run', '--model', 'oracle', '--model', 'empty', '--out', dir, '--jobs', '1', '--skip-env-check', ...extra], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  child.stdout!.resume();
  child.stderr!.resume();
  const deadline = Date.now() + 120_000;
  while (verdicts(dir) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  stop(child);
  await exited;
}

/** One CSV line's cells, quoted cells (which may hold commas) unquoted. */
function csvCells(line: string): string[] {
  return [...line.matchAll(/("(?:[^"]|"")*"|[^,]*)(?:,|$)/g)].map((m) => m[1].replace(/^"|"$/g, '').replace(/""/g, '"')).slice(0, -1);
}

function expectPartial(dir: string, status: string, headline = /oracle 100\.00/): void {
  const listed = JSON.parse(rcb(['runs', dir, '--json']).stdout) as { status: string; partial: { status: string; judged: number; pending: number } | null }[];
  expect(listed[0].status).toBe(status);
  const { judged, pending } = listed[0].partial!;
  expect(judged).toBeGreaterThan(0);
  expect(pending).toBeGreaterThan(0);
  const counts = `${judged} of ${judged + pending} task sample(s) judged, ${pending} pending`;
  const runs = rcb(['runs', dir]).stdout;
  expect(runs).toContain(`  ${status}  `);
  expect(runs).toContain(`partial: over the ${judged} judged of ${judged + pending}, not final`);
  // The headline: over the judged tasks only, so the oracle is never scored below 100 by its pending tasks.
  expect(runs).toMatch(headline);
  const table = rcb(['report', dir]).stdout;
  expect(table.split('\n')[0]).toBe(`PARTIAL: partial run (${status}): ${counts}; scores are over the judged tasks only and are not final`);
  expect(rcb(['report', dir, '--format', 'markdown']).stdout).toContain(`**PARTIAL:** partial run (${status}): ${counts}`);
  const json = JSON.parse(rcb(['report', dir, '--format', 'json']).stdout);
  expect([json.run.status, json.partial]).toEqual([status, { status, judged, pending }]);
  const csv = rcb(['report', dir, '--format', 'csv']).stdout.split('\n');
  const header = csvCells(csv[0]);
  const at = header.indexOf('run_status');
  expect(header.slice(at, at + 3)).toEqual(['run_status', 'judged', 'pending']);
  expect(csvCells(csv[1]).slice(at, at + 3)).toEqual([`partial (${status})`, String(judged), String(pending)]);
  const html = rcb(['report', dir, '--format', 'html']).stdout;
  expect(html).toContain(`partial run (${status}): ${counts}`);
  expect(html).toContain(`<td>${status}</td>`);
}

describe('a run that did not finish', () => {
  it('Ctrl-C: cancelled, labelled partial in every format', async () => {
    const dir = join(tempDir(), 'run');
    await stoppedRun(dir, (c) => c.kill('SIGINT'));
    expectPartial(dir, 'cancelled');
  });

  it('kill -9: the process is gone, so the run reads interrupted, not evaluating', async () => {
    const dir = join(tempDir(), 'run');
    await stoppedRun(dir, (c) => c.kill('SIGKILL'));
    expectPartial(dir, 'interrupted');
  });

  it('SIGPIPE: its output closed, it ends, and the run reads interrupted', async () => {
    const dir = join(tempDir(), 'run');
    // As `rcb run 2>&1 | head -1`: the reader goes away, and the next write fails with EPIPE.
    // Off a terminal, progress is a line every 5 s: 20 samples keep the run going past the next
    // one, so that write, not the final table, is the one that meets the closed pipe.
    await stoppedRun(
      dir,
      (c) => {
        c.stdout!.destroy();
        c.stderr!.destroy();
      },
      ['--samples', '20'],
    );
    // A task counts once all its 20 samples are judged: the oracle's headline is 100 or, with none whole yet, n/a; never lower.
    expectPartial(dir, 'interrupted', /oracle (100\.00|n\/a)/);
  });
});
