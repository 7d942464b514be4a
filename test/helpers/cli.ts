/**
 * Running the rcb command line as a user would: a child process of the TypeScript sources
 * (through tsx, so no build is needed), with a clean temp folder per test.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO = resolve(__dirname, '..', '..');
export const PSET_MINI = join(REPO, 'examples', 'pset-mini');
const ENTRY = join(REPO, 'bin', 'rcb.ts');
const TSX = require.resolve('tsx/cjs');

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function tempDir(prefix = 'rcb-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function rcb(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): CliResult {
  const r = spawnSync(process.execPath, ['-r', TSX, ENTRY, ...args], {
    cwd: opts.cwd ?? REPO,
    env: { ...process.env, ...opts.env },
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function rcbAsync(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  return spawn(process.execPath, ['-r', TSX, ENTRY, ...args], {
    cwd: opts.cwd ?? REPO,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}
