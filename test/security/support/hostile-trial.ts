/**
 * The hostile completions through one executor, run inside the Fargate-like host by
 * fargate-like-host.test.ts: prints the raw executions as one JSON line, with what the
 * host itself saw (processes left in its pid namespace, calls of bwrap or unshare).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLocalExecutor } from '../../../adapters/executor';
import type { SandboxMode } from '../../../adapters/executor/executor-options';
import { loadPset } from '../../../core/pset/read-pset';
import { extractCompletion } from '../../../core/prompt/extract';
import { findSnippet } from '../../../core/prompt/mask';
import { candidateFor } from '../../../core/run/evaluate';

export interface HostileTrialConfig {
  warm: boolean;
  sandbox: SandboxMode;
  /** Loopback port the network case is pointed at (the test's listener). */
  port: number;
  /** Where the test keeps a private file, which the cases that reach outside are pointed at. */
  privateDir: string;
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2]) as HostileTrialConfig;
  const repo = join(__dirname, '..', '..', '..');
  const cases = readFileSync(join(repo, 'test', 'fixtures', 'replays', 'hostile.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { snippet: string; completion: string; case: string });
  const paper = loadPset(join(repo, 'examples', 'pset-mini'), { papers: ['smoothfocal'] }).papers[0];
  const candidates = cases.map((c) =>
    candidateFor(
      c.case,
      paper,
      findSnippet(paper, c.snippet),
      extractCompletion(c.completion.replace(/47611/g, String(config.port)).replace(/\/tmp\/rcb-hostile-sentinel/g, config.privateDir)),
    ),
  );
  const warnings: string[] = [];
  const executor = await createLocalExecutor({
    warm: config.warm,
    sandbox: config.sandbox,
    jobs: 2,
    warn: (m) => warnings.push(m),
    limits: { timeoutSec: 5, memoryMb: 2048, maxProcesses: 64, maxOutputBytes: 8 * 1024 * 1024, logCapBytes: 16 * 1024 },
  });
  let results;
  try {
    results = await executor.run(candidates);
  } finally {
    await executor.close();
  }
  // This is the host's own pid namespace: anything here but its init, tsx's launcher, this
  // process and what it runs itself (tsx's esbuild service) was left by a test.
  const parentOf = (pid: string): number => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
  const left = readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e) && ![1, process.pid, process.ppid].includes(Number(e)))
    .filter((e) => {
      try {
        return parentOf(e) !== process.pid;
      } catch {
        return false; // gone
      }
    })
    .map((e) => {
      try {
        return readFileSync(`/proc/${e}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      } catch {
        return '';
      }
    })
    .filter(Boolean);
  process.stdout.write(`${JSON.stringify({ results, left, warnings })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
