/**
 * The local run as a user runs it: the CLI in a child process, the bundled pset, the real
 * sandboxed executor and Debian's python3.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { rcb, rcbAsync, REPO, tempDir } from '../helpers/cli';

const WRONG = join(REPO, 'test', 'fixtures', 'replays', 'wrong-answers.jsonl');

function report(dir: string, ...args: string[]): unknown {
  const r = rcb(['report', dir, '--format', 'json', ...args]);
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout);
}

interface JsonReport {
  models: { model: string; scaled: { mean: number }; pass1: { mean: number }; tasks: number; failures: Record<string, number> }[];
}

function verdictRows(dir: string): { task_id: string; record: string }[] {
  const db = new Database(join(dir, 'rcb.sqlite'), { readonly: true });
  try {
    return db.prepare('SELECT task_id, record FROM verdicts ORDER BY task_id').all() as { task_id: string; record: string }[];
  } finally {
    db.close();
  }
}

describe('rcb run on the bundled example', () => {
  const out = tempDir();

  it('scores the oracle at 100% and the empty model at 0%, under both judges', () => {
    const r = rcb(['run', '--model', 'oracle', '--model', 'empty', '--out', out]);
    expect(r.status).toBe(0);
    // One sample: the mean and its 95% bootstrap interval, no meaningless ± 0.00.
    expect(r.stdout).toMatch(/oracle\s+100\.00\s+\[100\.00, 100\.00\]\s+100\.00\s+\[100\.00, 100\.00\]\s+28/);
    expect(r.stdout).toMatch(/empty\s+0\.00\s+\[0\.00, 0\.00\]\s+0\.00\s+\[0\.00, 0\.00\]\s+28\s+1\s+no_code 28/);
    expect(r.stdout).not.toContain('±');
    // Per-paper rows, in the printed table and in leaderboard.txt.
    expect(r.stdout).toMatch(/per paper:[\s\S]*grouprms\s+oracle\s+100\.00\s+\[100\.00, 100\.00\]\s+7\s+25\n\s+empty\s+0\.00/);
    expect(readFileSync(join(out, 'leaderboard.txt'), 'utf8')).toContain('per paper:');
    for (const judge of ['strict', 'official']) {
      const rep = report(out, '--judge', judge) as JsonReport;
      const byModel = Object.fromEntries(rep.models.map((m) => [m.model, m]));
      expect(byModel.oracle.scaled.mean).toBe(100);
      expect(byModel.empty.scaled.mean).toBe(0);
    }
    expect(existsSync(join(out, 'overall_stats.json'))).toBe(true);
    expect(readFileSync(join(out, 'leaderboard.txt'), 'utf8')).toContain('strict judge');
  });

  it('runs the same command again without repeating any model call or test', () => {
    const before = verdictRows(out);
    const r = rcb(['run', '--model', 'oracle', '--model', 'empty', '--out', out]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('0 model call(s), 56 answer(s) reused, 0 test(s) run');
    expect(verdictRows(out)).toEqual(before);
  });
});

describe('rcb run with a replay of wrong answers', () => {
  it('gives each wrong answer its expected failure class', () => {
    const out = tempDir();
    const r = rcb(['run', '--model', `replay:${WRONG}`, '--timeout', '3', '--out', out]);
    expect(r.status).toBe(0);
    const expected = readFileSync(WRONG, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { paper: string; snippet: string; expected_class: string });
    const db = new Database(join(out, 'rcb.sqlite'), { readonly: true });
    const rows = db.prepare('SELECT t.paper, t.snippet, v.record FROM tasks t JOIN verdicts v ON v.task_id = t.task_id').all() as {
      paper: string;
      snippet: string;
      record: string;
    }[];
    db.close();
    const classOf = new Map(rows.map((row) => [`${row.paper}/${row.snippet}`, JSON.parse(row.record).failureClass]));
    for (const e of expected)
      expect([`${e.paper}/${e.snippet}`, classOf.get(`${e.paper}/${e.snippet}`)]).toEqual([`${e.paper}/${e.snippet}`, e.expected_class]);
    // Tasks the replay has no answer for are generation errors, not silent passes.
    expect(classOf.get('grouprms/affine')).toBe('generation_error');
  });
});

describe('a run killed mid-way', () => {
  it('resumes to the same results as an uninterrupted run, repeating no finished test', async () => {
    // Prepare: an uninterrupted reference run.
    const reference = tempDir();
    expect(rcb(['run', '--model', 'oracle', '--samples', '2', '--jobs', '1', '--out', reference]).status).toBe(0);

    // Act: start the same run elsewhere, kill it (SIGKILL) once some verdicts are stored.
    const out = tempDir();
    const child = rcbAsync(['run', '--model', 'oracle', '--samples', '2', '--jobs', '1', '--out', out]);
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    const deadline = Date.now() + 60_000;
    let judgedAtKill = 0;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      if (!existsSync(join(out, 'rcb.sqlite'))) continue;
      try {
        judgedAtKill = verdictRows(out).length;
      } catch {
        continue;
      }
      if (judgedAtKill >= 10) break;
    }
    child.kill('SIGKILL');
    await exited;
    const survivors = verdictRows(out);
    expect(survivors.length).toBeGreaterThanOrEqual(10);
    expect(survivors.length).toBeLessThan(56);

    const resumed = rcb(['run', '--model', 'oracle', '--samples', '2', '--jobs', '1', '--out', out]);
    expect(resumed.status).toBe(0);
    const tested = Number(/(\d+) test\(s\) run/.exec(resumed.stdout)![1]);
    expect(tested).toBe(56 - survivors.length);

    // Assess: verdicts from before the kill are untouched; results equal the reference.
    const after = new Map(verdictRows(out).map((r) => [r.task_id, r.record]));
    for (const s of survivors) expect(after.get(s.task_id)).toBe(s.record);
    const pass = (rows: { task_id: string; record: string }[]) =>
      rows.map((r) => [r.task_id, JSON.parse(r.record).officialPass, JSON.parse(r.record).strictPass]);
    expect(pass(verdictRows(out))).toEqual(pass(verdictRows(reference)));
    expect(readdirSync(out)).toEqual(expect.arrayContaining(['rcb.sqlite', 'run.json', 'leaderboard.txt']));
  });
});
