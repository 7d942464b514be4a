/**
 * The cloud's environment check, as a user sees it: `rcb cloud run --emulate` with an image
 * interpreter that lacks one paper's package (a bare venv of Debian's python3: no numpy, which
 * grouprms imports). That paper's tasks are env_broken (out of the scores, named in the
 * leaderboard and in `rcb cloud status`), the other papers are judged, and each paper's oracle
 * runs once per image: once for its two shards, not at all for a later run of the same image.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { rcb, tempDir } from '../helpers/cli';

const root = tempDir('rcb-emulate-env-');
// The uid sandbox's test users must reach the interpreter.
chmodSync(root, 0o755);
execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', join(root, 'slim')]);
const SLIM = join(root, 'slim', 'bin', 'python');
const stateDir = join(root, 'state');

const runIdOf = (stderr: string): string => /run ([0-9a-f]{16}) \(emulated\)/.exec(stderr)![1];

describe("rcb cloud run --emulate on an image that lacks one paper's package", () => {
  let first: ReturnType<typeof rcb>;

  beforeAll(() => {
    first = rcb(['cloud', 'run', '--emulate', '--state-dir', stateDir, '--python', SLIM, '--model', 'oracle', '--model', 'empty'], { timeoutMs: 300_000 });
  }, 320_000);

  it("judges the other papers and keeps the broken one's tasks out of the scores, named", () => {
    expect([first.status, first.stderr.slice(-2000)]).toEqual([0, expect.any(String)]);
    // Four papers x two models: eight shards; each paper's oracle run by one of its two.
    expect(first.stderr).toContain('8 container run(s) (0 failed)');
    expect(first.stderr).toContain("environment checks: 4 run, 4 answered by the image's stored checks");
    expect(first.stderr).toContain('env_broken: grouprms (missing module numpy): 14 task(s) untested, out of the scores');
    expect(first.stdout).toMatch(/^oracle\s+100\.00 /m);
    expect(first.stdout).toMatch(/^empty\s+0\.00 /m);
    // Not scored: no score row of its own (it is listed apart, under env_broken).
    expect(first.stdout).not.toMatch(/^grouprms\s+(oracle|empty)\s/m);
    expect(first.stdout).toMatch(/^env_broken \(cannot run here, not scored\):\n.*\n.*\ngrouprms\s+14\s+missing module numpy/m);
    expect(first.stdout).toMatch(/^adamlite\s+oracle\s+100\.00/m);
    expect(first.stdout).toContain('note: env_broken: 14 task sample(s) of 1 paper(s) that cannot run in this environment');
    expect(first.stdout).toContain('grouprms (missing module numpy)');
  });

  it('lists the paper in rcb cloud status, and in the stored reports', () => {
    const runId = runIdOf(first.stderr);
    const status = rcb(['cloud', 'status', runId, '--emulate', '--state-dir', stateDir]);
    expect(status.status).toBe(0);
    expect(status.stdout).toContain('progress: succeeded: 42/42 answered, 42/42 judged');
    expect(status.stdout).toContain('env_broken: grouprms: 14 task(s) untested and out of the scores (missing module numpy)');
    const csv = rcb(['cloud', 'results', runId, '--emulate', '--state-dir', stateDir, '--format', 'csv']);
    expect(csv.status).toBe(0);
    // The ALL row of each model carries its env_broken task samples (the CSV's env_broken column).
    const [header, ...rows] = csv.stdout.split('\n');
    // Counted from the end: the quoted interval_method cell before it holds commas.
    const names = header.split(',');
    const fromEnd = names.length - names.indexOf('env_broken');
    expect(fromEnd).toBeLessThan(names.length);
    expect(rows.filter((l) => /^strict,all,(oracle|empty),ALL,/.test(l)).map((l) => l.split(',').at(-fromEnd))).toEqual(['7', '7']);
  });

  it('runs no oracle for a later run of the same image: every shard reads the stored checks', () => {
    const again = rcb(['cloud', 'run', '--emulate', '--state-dir', stateDir, '--python', SLIM, '--model', 'oracle'], { timeoutMs: 300_000 });
    expect([again.status, again.stderr.slice(-2000)]).toEqual([0, expect.any(String)]);
    expect(runIdOf(again.stderr)).not.toBe(runIdOf(first.stderr));
    expect(again.stderr).toContain('4 container run(s) (0 failed)');
    expect(again.stderr).toContain("environment checks: 0 run, 4 answered by the image's stored checks");
    expect(again.stderr).toContain('env_broken: grouprms (missing module numpy): 7 task(s) untested, out of the scores');
  }, 320_000);
});
