/**
 * Export and runs that lose nothing (docs/security.md, docs/running-locally.md): one export
 * file per model however the ids slug, never written through a symlink; reading commands
 * write nothing into a run directory; one `rcb run` per run directory at a time.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { rcb, tempDir } from '../helpers/cli';

jest.setTimeout(300_000);

const BODY =
  '```python\n        self.t = 0\n        self.m = [[0.0] * len(p) for p in self.params]\n        self.v = [[0.0] * len(p) for p in self.params]\n```\n';

function replayRun(models: string[]): { dir: string; run: string } {
  const dir = tempDir();
  const replay = join(dir, 'answers.jsonl');
  writeFileSync(
    replay,
    models.map((model) => `${JSON.stringify({ paper: 'adamlite', snippet: 'state init', model, sample: 0, completion: BODY })}\n`).join(''),
  );
  const run = join(dir, 'run');
  const r = rcb(['run', '--model', `replay:${replay}`, '--papers', 'adamlite', '--skip-env-check', '--out', run]);
  expect([r.status, r.stderr.slice(-400)]).toEqual([0, expect.any(String)]);
  return { dir, run };
}

/** The start time field of /proc/PID/stat, as rcb's lock records it. */
function startOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

describe('rcb export', () => {
  let dir: string;
  let run: string;
  beforeAll(() => ({ dir, run } = replayRun(['team a/model', 'team a model'])));

  it('writes one file per model when two ids make the same slug', () => {
    // Act
    const out = join(dir, 'logs');
    const r = rcb(['export', run, '--format', 'inspect', '--out', out]);
    // Assess: two logs, each naming its own model, and no temporary file left.
    expect(r.status).toBe(0);
    const files = readdirSync(out);
    expect(files).toHaveLength(2);
    const models = files.map((f) => JSON.parse(readFileSync(join(out, f), 'utf8')).eval.model).sort();
    expect(models).toEqual(['team a model', 'team a/model']);
  });

  it('refuses to write through a symlink planted at a log name, and leaves its target alone', () => {
    // Prepare: a first export gives the names; one is replaced by a link to a victim file.
    const out = join(dir, 'planted');
    expect(rcb(['export', run, '--format', 'inspect', '--out', out]).status).toBe(0);
    const [name] = readdirSync(out);
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'keep me\n');
    const log = join(out, name);
    rmSync(log);
    symlinkSync(victim, log);
    // Act
    const r = rcb(['export', run, '--format', 'inspect', '--out', out]);
    // Assess
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${log}: is a symlink; rcb does not write through it`);
    expect(readFileSync(victim, 'utf8')).toBe('keep me\n');
  });

  it('refuses an --out that is a file, with no stack trace', () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    const r = rcb(['export', run, '--format', 'inspect', '--out', file]);
    expect([r.status, r.stderr]).toEqual([1, `rcb: --out ${file}: exists and is not a folder (give a folder, or a name that does not exist yet)\n`]);
  });
});

describe('reading commands write nothing', () => {
  it.each([
    ['report', (d: string) => ['report', d], 65],
    ['show', (d: string) => ['show', d], 65],
    ['rejudge', (d: string) => ['rejudge', d], 65],
    ['export', (d: string) => ['export', d, '--format', 'inspect', '--out', join(d, 'x')], 65],
  ])('rcb %s leaves an empty rcb.sqlite empty and says why', (_name, args, code) => {
    // Prepare
    const d = tempDir();
    writeFileSync(join(d, 'rcb.sqlite'), '');
    writeFileSync(join(d, 'run.json'), '{"runId": "abc"}\n');
    // Act
    const r = rcb(args(d));
    // Assess
    expect([r.status, r.stderr]).toEqual([code, `rcb: ${join(d, 'rcb.sqlite')}: an empty file, not an rcb store; rcb cannot read this run directory\n`]);
    expect(statSync(join(d, 'rcb.sqlite')).size).toBe(0);
    expect(readdirSync(d).sort()).toEqual(['rcb.sqlite', 'run.json']);
  });

  it('rcb runs lists an empty rcb.sqlite as DAMAGED and leaves it empty', () => {
    const parent = tempDir();
    const d = join(parent, 'r');
    mkdirSync(d);
    writeFileSync(join(d, 'rcb.sqlite'), '');
    writeFileSync(join(d, 'run.json'), '{"runId": "abc"}\n');
    const r = rcb(['runs', parent]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('an empty file, not an rcb store');
    expect(statSync(join(d, 'rcb.sqlite')).size).toBe(0);
  });

  it('an rcb.sqlite that is a folder is said in one line (exit 65)', () => {
    const d = tempDir();
    mkdirSync(join(d, 'rcb.sqlite'));
    writeFileSync(join(d, 'run.json'), '{"runId": "abc"}\n');
    const r = rcb(['report', d]);
    expect([r.status, r.stderr]).toEqual([65, `rcb: ${join(d, 'rcb.sqlite')}: a folder, not an rcb store (a file); rcb cannot read this run directory\n`]);
  });
});

describe('one rcb run per run directory', () => {
  it('refuses a second run while a live process holds the lock, naming its pid', async () => {
    // Prepare: a live process stands in for the first run (its pid and start time in the lock).
    const out = join(tempDir(), 'run');
    mkdirSync(out);
    const holder = spawn('sleep', ['120'], { stdio: 'ignore' });
    try {
      const pid = holder.pid!;
      writeFileSync(join(out, 'rcb.lock'), JSON.stringify({ pid, host: hostname(), start: startOf(pid), since: '2026-12-04T21:00:00.000Z' }));
      // Act
      const r = rcb(['run', '--model', 'oracle', '--papers', 'adamlite', '--skip-env-check', '--out', out]);
      // Assess: refused before any test, the holder named.
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`is in use by another rcb run (pid ${pid} on ${hostname()}`);
      expect(existsSync(join(out, 'rcb.sqlite'))).toBe(false);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('takes over a lock whose holder is gone, and removes its own at the end', () => {
    // Prepare: a lock left by a process that no longer runs.
    const out = join(tempDir(), 'run');
    mkdirSync(out);
    const gone = spawnAndReap();
    writeFileSync(join(out, 'rcb.lock'), JSON.stringify({ pid: gone, host: hostname(), start: '1', since: '2026-12-04T21:00:00.000Z' }));
    // Act
    const r = rcb(['run', '--model', 'oracle', '--papers', 'adamlite', '--skip-env-check', '--out', out]);
    // Assess
    expect([r.status, r.stderr.slice(-300)]).toEqual([0, expect.any(String)]);
    expect(existsSync(join(out, 'rcb.lock'))).toBe(false);
  });
});

/** The pid of a process that has exited and been reaped. */
function spawnAndReap(): number {
  const r = spawnSync('sh', ['-c', 'echo $$']);
  return Number(String(r.stdout).trim());
}
