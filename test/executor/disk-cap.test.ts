/**
 * The disk a test may fill (adapters/executor/disk-cap.ts): a test that writes two files of
 * 1 GB into its workspace, each under the per-file limit, is killed once it passes the cap
 * (set small here, so it really writes little), with killedFor 'disk' and failure class
 * `resource`, through both executors, in bubblewrap and in the uid sandbox; one that stays
 * under it passes.
 */
import { rmSync } from 'node:fs';
import type { ColdExecutor, WarmExecutor } from '../../adapters/executor';
import { createLocalExecutor } from '../../adapters/executor';
import { findBwrap } from '../../adapters/executor/sandbox';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { classifyFailure } from '../../core/failure-class';
import type { RawExecution } from '../../core/executor';
import { CORRECT_BODY, makeTinyPaper, modelSource, type TinyPaper } from '../fixtures/executor/tiny-paper';

jest.setTimeout(300_000);

const CAP_MB = 24;

/** Writes `files` files of `mb` MiB each into the workspace, 1 MiB at a time, saying how far it got. */
const WRITER = (files: number, mb: number) => `
import os
chunk = b"\\1" * (1 << 20)
written = 0
for i in range(${files}):
    with open("big-%d.bin" % i, "wb") as f:
        for _ in range(${mb}):
            f.write(chunk)
            f.flush()
            written += 1
            if written % 8 == 0:
                print("WROTE %d" % written, flush=True)
print("DONE %d" % written, flush=True)
`;

const SANDBOXES = [...(findBwrap() ? (['bwrap'] as const) : []), ...(runningAsRoot() ? (['uid'] as const) : [])];
const CASES = SANDBOXES.flatMap((sandbox) => [
  { sandbox, kind: 'cold', warm: false },
  { sandbox, kind: 'warm', warm: true },
]);

const classOf = (r: RawExecution) =>
  classifyFailure({ completionEmpty: false, killedFor: r.killedFor, signal: r.signal, exitCode: r.exitCode, stderr: r.stderr.text, stdout: r.stdout.text });
const lastWrote = (r: RawExecution) => Math.max(0, ...[...r.stdout.text.matchAll(/^WROTE (\d+)$/gm)].map((m) => Number(m[1])));

describe.each(CASES)('$kind executor in $sandbox: the disk cap', ({ sandbox, warm }) => {
  let paper: TinyPaper;
  let executor: ColdExecutor | WarmExecutor;
  let big: RawExecution;
  let small: RawExecution;

  beforeAll(async () => {
    paper = makeTinyPaper();
    executor = await createLocalExecutor({
      warm,
      sandbox,
      jobs: 1,
      preload: warm ? ['json'] : undefined,
      limits: { maxDiskMb: CAP_MB, timeoutSec: 240 },
      warn: () => undefined,
    });
    [big] = await executor.run([paper.candidate('two-gigabytes', modelSource(CORRECT_BODY, WRITER(2, 1024)))]);
    [small] = await executor.run([paper.candidate('under-the-cap', modelSource(CORRECT_BODY, WRITER(2, 4)))]);
  });

  afterAll(async () => {
    await executor?.close();
    rmSync(paper.root, { recursive: true, force: true });
  });

  it('kills a test that writes 2 x 1 GB once it passes the cap, as a resource failure', () => {
    expect([big.sandbox, big.killedFor, classOf(big)]).toEqual([sandbox, 'disk', 'resource']);
    expect(big.stdout.text).not.toContain('DONE');
    // It got past the cap, and nowhere near its 2,048 MiB.
    expect(lastWrote(big)).toBeGreaterThanOrEqual(CAP_MB - 8);
    expect(lastWrote(big)).toBeLessThan(1024);
  });

  it('lets a test that stays under the cap pass', () => {
    expect([small.killedFor, small.exitCode, small.stdout.text]).toEqual([null, 0, expect.stringContaining('DONE 8')]);
  });
});
