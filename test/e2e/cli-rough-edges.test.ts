/**
 * The rough edges a new user hit (issue 13), each as that user met it: the command line in
 * a child process, its output read as printed.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadPset } from '../../core/pset/read-pset';
import { originalBody } from '../../core/prompt/mask';
import { PSET_MINI, rcb, rcbAsync, rcbCommand, REPO, tempDir } from '../helpers/cli';
import { describeWithRealPset, REAL_PSET } from '../helpers/shared-data';

jest.setTimeout(180_000);

describeWithRealPset('output into a pipe the reader closes early', () => {
  it('`rcb prompt ... | head -c 10` ends quietly with exit 0, not "Error: write EPIPE"', () => {
    // Prepare: the real set's longest paper makes a prompt (~140 kB) larger than a pipe's buffer.
    const snippet = (JSON.parse(rcb(['tasks', '--pset', REAL_PSET, '--papers', 'eomt', '--json']).stdout) as { snippet: string }[])[0].snippet;
    // Act
    const r = spawnSync(
      'bash',
      [
        '-c',
        `${rcbCommand()
          .map((a) => `"${a}"`)
          .join(' ')} prompt --pset "${REAL_PSET}" eomt "${snippet}" | head -c 10 >/dev/null; echo "rcb exit \${PIPESTATUS[0]}" >&2`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    // Assess
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled|node:events/);
    expect(r.stderr.trim()).toBe('rcb exit 0');
  });
});

describeWithRealPset('rcb tasks table', () => {
  it('fits the real set in 150 columns, nesting shown by indentation instead of a parent column', () => {
    const r = rcb(['tasks', '--pset', REAL_PSET]);
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^paper\s+file\s+loc\s+snippet \(nested ones indented\)$/);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(150);
    expect(lines).toHaveLength(213);
    const mini = rcb(['tasks']).stdout.split('\n');
    // "logit scale" sits inside "tempered logits": two more spaces of indentation.
    const indent = (name: string) => / +$/.exec(mini.find((l) => l.endsWith(` ${name}`))!.slice(0, -name.length))![0].length;
    expect(indent('logit scale')).toBe(indent('tempered logits') + 2);
  });
});

describe('messages and help', () => {
  it('prefixes an error with "rcb: " once, not "rcb: rcb: "', () => {
    const out = join(tempDir(), 'run');
    const r = rcb(['run', '--python', '/nonexistent/python3', '--out', out]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rcb: --python \/nonexistent\/python3: does not exist/m);
    expect(r.stderr).not.toContain('rcb: rcb:');
  });

  it('a cloud command prints no Node-version warning of the AWS SDK on Node 20', () => {
    // Prepare: a stack endpoint nothing listens on, so the command fails at once and offline.
    const env = {
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_MAX_ATTEMPTS: '1',
    };
    // Act
    const r = rcb(['cloud', 'status', 'some-run'], { env });
    // Assess
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rcb: cannot describe stack Rcb/m);
    expect(r.stderr).not.toMatch(/NodeVersionSupportWarning|Warning:/);
  });

  it('--version prints the package version', () => {
    const r = rcb(['--version']);
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version);
  });

  it('--model help says its default once and in words (no "(default: [])")', () => {
    for (const [command, shown] of [
      ['run', '(default: oracle)'],
      ['estimate', '(default: none)'],
    ]) {
      const help = rcb([command, '--help']).stdout.replace(/\s+/g, ' ');
      expect(help).not.toContain('[]');
      expect(help).not.toContain('default oracle)');
      expect(help).toMatch(new RegExp(`--model <id> .*?${shown.replace(/[()]/g, '\\$&')}`));
    }
  });

  it('rcb estimate says what it is counting before it counts, model by model', () => {
    const r = rcb(['estimate', '--model', 'gpt-5.4', '--model', 'claude-opus-4.6']);
    expect(r.status).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe('counting the input tokens of 28 prompt(s) on 4 paper(s) for 2 model(s) ...');
    expect(lines[1]).toMatch(/^ {2}gpt-5\.4 \(1\/2\): \d+ input tokens, counted in \d+\.\ds$/);
    expect(lines[2]).toMatch(/^ {2}claude-opus-4\.6 \(2\/2\): \d+ input tokens/);
  });
});

describe('Ctrl-C during a run', () => {
  /** Every answer right, but each test sleeps first: the run is still evaluating when interrupted. */
  function slowReplay(dir: string, seconds: number): string {
    const pset = loadPset(PSET_MINI);
    const lines = pset.papers.flatMap((p) =>
      p.snippets.map((s) =>
        JSON.stringify({
          paper: p.meta.id,
          snippet: s.name,
          file: s.file,
          model: 'slow',
          sample: 0,
          // Sleeps on the first call in the test only (a body may run thousands of times).
          completion: `\`\`\`python\n${' '.repeat(s.bodyIndent)}'_rcb_slept' in globals() or globals().update(_rcb_slept=__import__("time").sleep(${seconds}))\n${originalBody(s)}\`\`\`\n`,
        }),
      ),
    );
    const file = join(dir, 'slow.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  }

  const judged = (out: string) => {
    const db = new Database(join(out, 'rcb.sqlite'), { readonly: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM verdicts').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  /** Verdicts in the run's store now (0 before the store exists). */
  const judgedNow = (out: string): number => {
    try {
      return judged(out);
    } catch {
      return 0;
    }
  };

  /**
   * `rcb run` of a replay whose tests each sleep `seconds` first, Ctrl-C'd `times` times once
   * every answer is in and tests are running: each next Ctrl-C when rcb has said it took the
   * one before. Counts the verdicts stored when rcb said so, and the time from then to its exit.
   */
  async function interrupt(times: number, seconds: number) {
    const dir = tempDir();
    const replay = slowReplay(dir, seconds);
    const out = join(dir, 'run');
    const child = rcbAsync(['run', '--model', `replay:${replay}`, '--jobs', String(JOBS), '--out', out]);
    let stderr = '';
    let stdout = '';
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => (stdout += d));
    let signals = 0;
    /** Per Ctrl-C taken (rcb's note printed), the verdicts stored then and when it was. */
    const taken: { judged: number; at: number }[] = [];
    const notes = [/interrupted: finishing the tests in flight/, /stopping now: the tests in flight are killed/];
    child.stderr!.on('data', (d: string) => {
      stderr += d;
      // Once answers are in and the first tests are running.
      if (!signals && /generate 28\/28/.test(stderr)) {
        signals = 1;
        setTimeout(() => child.kill('SIGINT'), 500);
      }
      while (taken.length < signals && notes[taken.length].test(stderr)) {
        taken.push({ judged: judgedNow(out), at: Date.now() });
        if (signals < times) {
          signals++;
          child.kill('SIGINT');
        }
      }
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    const last = taken.at(-1);
    return { code, stderr, stdout, out, replay, taken, secondsAfterLast: last ? (Date.now() - last.at) / 1000 : NaN };
  }

  /** rcb run's --jobs here; the run hands the executor at most twice that many tests at once. */
  const JOBS = 2;

  it('the first stops starting tests, lets the ones in flight finish, and ends "cancelled" (exit 130); the same command resumes', async () => {
    const r = await interrupt(1, 1.5);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 130, stderr: expect.stringContaining('interrupted: finishing the tests in flight') });
    expect(r.stderr).toMatch(/run cancelled after [\d.]+s: \d+ of 28 task\(s\) judged/);
    expect(r.stdout).not.toContain('run succeeded');
    // No test started after the Ctrl-C: at most the ones in flight (2 jobs x 2) were judged after it.
    const before = judged(r.out);
    expect(r.taken).toHaveLength(1);
    expect(before - r.taken[0].judged).toBeLessThanOrEqual(JOBS * 2);
    expect(before).toBeLessThan(28);
    const again = rcb(['run', '--model', `replay:${r.replay}`, '--jobs', String(JOBS), '--out', r.out]);
    expect(again.status).toBe(0);
    expect(again.stdout).toContain(`0 model call(s), 28 answer(s) reused, ${28 - before} test(s) run`);
  });

  it('the second stops the tests in flight at once, saying so', async () => {
    // Tests that sleep 40 s (below the 60 s limit): one left to finish would outlast the run.
    const r = await interrupt(2, 40);
    expect(r.code).toBe(130);
    expect(r.stderr).toContain('stopping now: the tests in flight are killed');
    expect(r.stderr).not.toMatch(/executor failed on/);
    // Killed, not finished: no verdict came after the second Ctrl-C, and rcb ended long before a test in flight could have.
    expect(r.taken).toHaveLength(2);
    expect(judged(r.out)).toBe(r.taken[1].judged);
    expect(r.secondsAfterLast).toBeLessThan(40);
    expect(judged(r.out)).toBeLessThan(28);
  });
});
