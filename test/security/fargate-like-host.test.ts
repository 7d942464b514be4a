/**
 * The uid sandbox on a host like a Fargate task (support/fargate-like-host.ts: root with a
 * container's default capabilities, a read-only root, the host's network, user namespaces
 * refused). The hostile completions run there through both executors with `--sandbox uid`,
 * and with `auto`, which must fall back to uid because bubblewrap cannot start: each case is
 * contained as in bubblewrap (no secret seen, nothing private read or changed, no connection
 * to a listener on the host's loopback, no process left) and fails strict with its flag; and
 * rcb never runs bwrap or unshare in uid mode (decoys on PATH record any call).
 */
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RawExecution } from '../../core/executor';
import { judge } from '../../core/judge';
import { extractCompletion } from '../../core/prompt/extract';
import { findBwrap } from '../../adapters/executor/sandbox';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { REPO } from '../helpers/cli';
import { fargateLikeHost } from './support/fargate-like-host';
import type { HostileTrialConfig } from './support/hostile-trial';

jest.setTimeout(300_000);

interface HostileCase {
  completion: string;
  case: string;
  expected_flag: string;
}

const cases: HostileCase[] = readFileSync(join(REPO, 'test', 'fixtures', 'replays', 'hostile.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));
const FAKE_SECRETS = { FAKE_API_KEY: 'sk-fake-5d0c3e11', AWS_SECRET_ACCESS_KEY: 'fake-aws-secret-1b7d', OPENAI_API_KEY: 'sk-fake-openai-a9e4' };
const SENTINEL_TEXT = 'rcb-fargate-sentinel-7c2e';
const CAN_RUN = runningAsRoot() && findBwrap() !== null;

const CONFIGS = [
  { executor: 'cold', warm: false, sandbox: 'uid' },
  { executor: 'warm', warm: true, sandbox: 'uid' },
  { executor: 'warm', warm: true, sandbox: 'auto' },
] as const;

(CAN_RUN ? describe.each(CONFIGS) : describe.skip.each(CONFIGS))('on the Fargate-like host: $executor executor, --sandbox $sandbox', ({ warm, sandbox }) => {
  // Decoys are on PATH for uid runs only (see the spawn below).
  let scratch: string;
  let server: Server;
  let connections = 0;
  let outcome: { results: RawExecution[]; left: string[]; warnings: string[] };
  let sentinel: string;

  beforeAll(async () => {
    // Prepare: a scratch directory (the task's /scratch), decoy bwrap and unshare, a private
    // file outside, a listener on the host's loopback, and secrets in rcb's environment.
    scratch = mkdtempSync(join(tmpdir(), 'rcb-fargate-like-'));
    chmodSync(scratch, 0o711);
    const decoys = join(scratch, 'decoys');
    mkdirSync(decoys);
    for (const name of ['bwrap', 'unshare']) {
      writeFileSync(join(decoys, name), `#!/bin/sh\necho "${name} $*" >> ${join(scratch, 'called.log')}\nexit 1\n`, { mode: 0o755 });
    }
    const privateDir = mkdtempSync(join(tmpdir(), 'rcb-fargate-private-'));
    sentinel = join(privateDir, 'secret.txt');
    writeFileSync(sentinel, SENTINEL_TEXT, { mode: 0o600 });
    server = createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const config: HostileTrialConfig = { warm, sandbox, port: (server.address() as AddressInfo).port, privateDir };

    // Act: the trial runs inside the host.
    const trial = [
      process.execPath,
      join(REPO, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
      join(__dirname, 'support', 'hostile-trial.ts'),
      JSON.stringify(config),
    ];
    const host = fargateLikeHost(scratch, trial);
    outcome = await new Promise((resolve, reject) => {
      const child = spawn(findBwrap()!, host.args, {
        cwd: REPO,
        // auto finds the real bwrap, which fails there as on Fargate; uid must not look for it.
        env: { ...process.env, ...FAKE_SECRETS, PATH: `${sandbox === 'uid' ? `${decoys}:` : ''}${process.env.PATH ?? '/usr/bin:/bin'}` },
        stdio: ['ignore', 'pipe', 'pipe', host.seccompFd],
      });
      closeSync(host.seccompFd);
      let stdout = '';
      let stderr = '';
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (d: string) => (stdout += d));
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (d: string) => (stderr += d));
      child.on('close', (code) => {
        if (code !== 0) return reject(new Error(`the trial exited ${code}: ${stderr.slice(-4000)}`));
        resolve(JSON.parse(stdout.trim().split('\n').pop()!));
      });
    });
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(scratch, { recursive: true, force: true });
    rmSync(join(sentinel, '..'), { recursive: true, force: true });
  });

  it('runs every case in the uid sandbox, none stopping the run', () => {
    expect(outcome.results.map((r) => r.taskId)).toEqual(cases.map((c) => c.case));
    expect(outcome.results.filter((r) => r.infraError)).toEqual([]);
    expect(new Set(outcome.results.map((r) => r.sandbox))).toEqual(new Set(['uid']));
    if (sandbox === 'auto') expect(outcome.warnings.join('\n')).toMatch(/using the uid sandbox instead/);
  });

  it.each(cases.map((c) => [c.case, c.expected_flag]))('%s fails the strict judge with flag %s', (name, flag) => {
    const i = cases.findIndex((c) => c.case === name);
    const v = judge(outcome.results[i], { completion: extractCompletion(cases[i].completion), testUsesUnittest: true });
    expect(v.strictPass).toBe(false);
    expect([name, flag.split('|').some((f) => v.flags.includes(f))]).toEqual([name, true]);
  });

  it('lets no secret of rcb’s environment, and no private file, reach a test', () => {
    for (const r of outcome.results) {
      for (const secret of [...Object.values(FAKE_SECRETS), SENTINEL_TEXT]) expect(r.stdout.text + r.stderr.text).not.toContain(secret);
    }
    expect(readFileSync(sentinel, 'utf8')).toBe(SENTINEL_TEXT);
    expect(existsSync(join(sentinel, '..', 'pwned.txt'))).toBe(false);
  });

  it('makes no connection to the host’s loopback', () => {
    expect(connections).toBe(0);
    for (const r of outcome.results) expect(r.stdout.text).not.toContain('CONNECTED-LOOPBACK');
  });

  it('leaves no process in the task', () => {
    expect(outcome.left).toEqual([]);
  });

  it('never runs bwrap or unshare in uid mode', () => {
    const log = join(scratch, 'called.log');
    const calls = existsSync(log) ? readFileSync(log, 'utf8') : '';
    expect(calls).toBe('');
  });
});
