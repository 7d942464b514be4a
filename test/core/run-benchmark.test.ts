/**
 * The local run's hand-off to the executor: the executor hears of the papers before the
 * first answer exists, and every answer reaches it as soon as it is generated, so a slow
 * test never holds back the answers after it (no batch barrier).
 */
import { join } from 'node:path';
import type { Candidate, RawExecution, TestExecutor } from '../../core/executor';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { resourcePath, packageRoot } from '../../core/util/package-root';
import { runBenchmark } from '../../core/run/run-benchmark';
import type { RunSpec } from '../../core/records';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { OracleModel } from '../../adapters/models/offline';
import { passedSuiteReport } from '../helpers/driver-report';

const EXAMPLE = join(packageRoot(), 'examples', 'pset-mini');

function passed(c: Candidate): RawExecution {
  const empty = { text: '', totalBytes: 0, truncated: false };
  return {
    taskId: c.taskId,
    exitCode: 0,
    signal: null,
    durationMs: 5,
    killedFor: null,
    stdout: empty,
    stderr: { ...empty },
    markersSeen: [],
    driver: passedSuiteReport(1),
    tamperedFiles: [],
    sandbox: 'bwrap',
    executor: 'warm',
  };
}

/** An executor whose first candidate stays running until every other candidate has reached it. */
class FirstHeldExecutor implements TestExecutor {
  readonly events: string[] = [];
  readonly seen = new Set<string>();
  heldUntilAllSeen: boolean | null = null;
  private releaseFirst: (() => void) | null = null;

  constructor(private readonly total: number) {}

  expectPapers(paperDirs: string[]): void {
    this.events.push(`expect ${paperDirs.length}`);
  }

  async run(candidates: Candidate[], onResult?: (r: RawExecution) => void | Promise<void>): Promise<RawExecution[]> {
    this.events.push('run');
    const results: RawExecution[] = [];
    for (const c of candidates) {
      const first = this.seen.size === 0;
      this.seen.add(c.taskId);
      if (first) {
        await new Promise<void>((resolve) => {
          // Without this the test would hang on a barrier; with it, it fails. Long: it only
          // runs out when the behaviour is broken (the others come in-process, in milliseconds),
          // and must not run out first on a loaded machine.
          const timer = setTimeout(() => {
            this.heldUntilAllSeen ??= false;
            resolve();
          }, 30_000);
          this.releaseFirst = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      } else if (this.seen.size === this.total) {
        this.heldUntilAllSeen ??= true;
        this.releaseFirst?.();
      }
      const r = passed(c);
      await onResult?.(r);
      results.push(r);
    }
    return results;
  }

  async close(): Promise<void> {}
}

describe('runBenchmark', () => {
  it('announces the papers to the executor first, and hands it every answer while an earlier test still runs', async () => {
    // Prepare
    const pset = loadPset(EXAMPLE);
    const template = loadTemplate(resourcePath('prompt-template.txt'));
    const oracle = new OracleModel(pset);
    const spec: RunSpec = {
      psetDigest: pset.digest,
      psetRoot: EXAMPLE,
      models: [{ id: oracle.id, params: oracle.params }],
      samples: 1,
      withPaper: false,
      papers: null,
      promptTemplateDigest: template.digest,
      timeoutSec: 60,
      budgetUsd: null,
    };
    const total = pset.papers.reduce((n, p) => n + p.snippets.length, 0);
    const executor = new FirstHeldExecutor(total);
    const store = new SqliteRunStore(':memory:');

    // Act
    const result = await runBenchmark(
      { store, clients: new Map([['oracle', oracle]]), executor },
      {
        runId: 'run-pipeline',
        spec,
        pset,
        template,
        models: { oracle: { config: { name: 'oracle' } } },
        generationConcurrency: 2,
        clearStaleReservations: true,
      },
    );

    // Assess
    expect(total).toBeGreaterThan(2);
    expect(executor.events[0]).toBe(`expect ${pset.papers.length}`);
    expect(executor.heldUntilAllSeen).toBe(true);
    expect(result.evaluated).toBe(total);
    expect(result.run.status).toBe('succeeded');
  });
});
