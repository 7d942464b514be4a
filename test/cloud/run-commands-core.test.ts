/**
 * What the `rcb cloud` commands decide, in core/cloud and SDK-free: progress lines from the
 * counters (or the items), exit codes, following an execution to its end, a run's status,
 * its results, and cancelling. On an in-memory store and executions.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunRecord } from '../../core/records';
import type { EnvironmentChecks, RunCounters, RunCountValues } from '../../core/cloud/ports';
import type { ExecutionDescription, ExecutionStatus, RunExecutions } from '../../core/cloud/execution-attempts';
import { exitCodeOf, formatProgress, progressLine, readProgress } from '../../core/cloud/run-progress';
import { watchRun } from '../../core/cloud/watch-run';
import { describeRunStatus } from '../../core/cloud/run-status';
import { cancelRun } from '../../core/cloud/cancel-run';
import { readRunResults } from '../../core/cloud/run-results';
import { cloudKeys } from '../../core/cloud/payloads';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { makeCompletion, makeRun, makeTask } from '../aws/records';
import { MemoryBlobStore } from './memory-blob-store';

/** Executions by name, each a list of descriptions returned one per describe call (the last repeats). */
class ScriptedExecutions implements RunExecutions {
  readonly stopped: Array<[string, string, string]> = [];
  readonly describes: string[] = [];
  constructor(private readonly script: Record<string, ExecutionDescription[]>) {}
  async start(name: string): Promise<boolean> {
    if (this.script[name]) return false;
    this.script[name] = [{ status: 'RUNNING' }];
    return true;
  }
  async status(name: string): Promise<ExecutionStatus | null> {
    return this.script[name]?.[0]?.status ?? null;
  }
  async describe(name: string): Promise<ExecutionDescription | null> {
    this.describes.push(name);
    const list = this.script[name];
    if (!list) return null;
    return list.length > 1 ? list.shift()! : list[0];
  }
  async stop(name: string, error: string, cause: string): Promise<void> {
    this.stopped.push([name, error, cause]);
  }
}

class Counters implements RunCounters {
  constructor(public values: RunCountValues | null) {}
  async setTotal(): Promise<void> {}
  async addCounts(): Promise<void> {}
  async getCounts(): Promise<RunCountValues | null> {
    return this.values;
  }
}

let store: SqliteRunStore;
let blobs: MemoryBlobStore;

async function seed(run: RunRecord, answered: number, failed: number): Promise<void> {
  await store.createRun(run);
  const tasks = [0, 1, 2, 3].map((n) => makeTask(`${run.runId}-t${n}`));
  await store.putTasks(run.runId, tasks);
  for (let n = 0; n < answered; n++)
    await store.putCompletion({
      ...makeCompletion(tasks[n].taskId),
      ...(n < failed ? { error: { kind: 'provider', message: 'boom', retryable: false } } : {}),
    } as never);
}

beforeEach(() => {
  store = new SqliteRunStore(join(mkdtempSync(join(tmpdir(), 'rcb-cloud-core-')), 'rcb.sqlite'));
  blobs = new MemoryBlobStore();
});
afterEach(async () => {
  await store.close();
});

describe('run progress', () => {
  it("reads the run item's counters when it has them, no count above the total", async () => {
    await seed({ ...makeRun('r1'), status: 'generating' }, 0, 0);
    const p = await readProgress(store, new Counters({ total: 4, settled: 6, failed: 1, judged: 2 }), 'r1');
    expect(p).toEqual({ total: 4, answered: 4, failed: 1, judged: 2 });
  });

  it('counts the items of a run planned before counters existed', async () => {
    await seed({ ...makeRun('r1'), status: 'generating' }, 3, 1);
    expect(await readProgress(store, new Counters(null), 'r1')).toEqual({ total: 4, answered: 3, failed: 1, judged: 0 });
    expect(await readProgress(store, undefined, 'r1')).toEqual({ total: 4, answered: 3, failed: 1, judged: 0 });
  });

  it('prints status, answered (failed), judged and the spend against the budget', async () => {
    const run = { ...makeRun('r1', { budgetUsd: 2 }), status: 'evaluating' as const, spentUsd: 0.25 };
    expect(formatProgress(run, { total: 4, answered: 4, failed: 1, judged: 2 })).toBe(
      'evaluating: 4/4 answered (1 failed), 2/4 judged, spend $0.2500 of $2.00',
    );
    expect(formatProgress({ ...makeRun('r2'), status: 'generating' }, { total: 4, answered: 0, failed: 0, judged: 0 })).toBe(
      'generating: 0/4 answered, 0/4 judged',
    );
    expect(await progressLine(store, undefined, null)).toBe('not planned yet');
  });

  it('exits as rcb run does once the execution succeeded, and 1 for any execution that did not', () => {
    expect(exitCodeOf('SUCCEEDED', 'succeeded')).toBe(0);
    expect(exitCodeOf('SUCCEEDED', 'budget_exhausted')).toBe(3);
    expect(exitCodeOf('SUCCEEDED', 'cancelled')).toBe(1);
    expect(exitCodeOf('SUCCEEDED', undefined)).toBe(0);
    for (const status of ['FAILED', 'TIMED_OUT', 'ABORTED'] as const) expect([status, exitCodeOf(status, 'succeeded')]).toEqual([status, 1]);
  });
});

describe('watchRun', () => {
  function deps(executions: RunExecutions, counters?: RunCounters) {
    const said: string[] = [];
    const printed: string[] = [];
    let sleeps = 0;
    return {
      said,
      printed,
      sleeps: () => sleeps,
      deps: {
        executions,
        store,
        counters,
        blobs,
        note: (t: string) => void said.push(t),
        print: (t: string) => void printed.push(t),
        sleep: async () => void sleeps++,
        pollMs: 0,
      },
    };
  }

  it("polls until the execution ends, says each change once, prints the stored leaderboard and exits by the run's status", async () => {
    // Prepare
    await seed({ ...makeRun('r1'), status: 'generating' }, 2, 0);
    await blobs.put(`${cloudKeys.reportPrefix('r1')}leaderboard.txt`, 'board\n');
    const executions = new ScriptedExecutions({ 'r1-2': [{ status: 'RUNNING' }, { status: 'RUNNING' }, { status: 'SUCCEEDED' }] });
    const counters = new Counters({ total: 4, settled: 2, failed: 0, judged: 0 });
    const w = deps(executions, counters);
    const origRead = executions.describe.bind(executions);
    executions.describe = async (name) => {
      const d = await origRead(name);
      // The run ends while the execution's last state runs.
      if (d?.status === 'SUCCEEDED') {
        counters.values = { total: 4, settled: 4, failed: 0, judged: 4 };
        await store.setRunStatus('r1', 'budget_exhausted');
      }
      return d;
    };

    // Act
    const code = await watchRun(w.deps, 'r1', 'r1-2');

    // Assess
    expect(code).toBe(3);
    expect(executions.describes).toEqual(['r1-2', 'r1-2', 'r1-2']);
    expect(w.sleeps()).toBe(2);
    expect(w.said).toEqual([
      'generating: 2/4 answered, 0/4 judged\n',
      'budget_exhausted: 4/4 answered, 4/4 judged\n',
      'run budget_exhausted (execution SUCCEEDED)\n',
      'read it with `rcb cloud results r1 [--format ...]`\n',
    ]);
    expect(w.printed).toEqual(['\nboard\n']);
  });

  it("exits 1 with the run's error, else the execution's, when the execution failed", async () => {
    await seed({ ...makeRun('r1'), status: 'generating' }, 0, 0);
    const w = deps(new ScriptedExecutions({ r1: [{ status: 'FAILED', error: 'States.Timeout', cause: 'shard p' }] }));

    expect(await watchRun(w.deps, 'r1', 'r1')).toBe(1);
    expect(w.said.at(-1)).toBe('run generating (execution FAILED): States.Timeout shard p\n');
    expect(w.printed).toEqual([]);

    await store.setRunStatus('r1', 'failed', 'PlanRun: estimate over budget');
    const again = deps(new ScriptedExecutions({ r1: [{ status: 'FAILED', error: 'X' }] }));
    expect(await watchRun(again.deps, 'r1', 'r1')).toBe(1);
    expect(again.said.at(-1)).toBe('run failed (execution FAILED): PlanRun: estimate over budget\n');
  });

  it('fails on an execution that does not exist rather than polling for ever', async () => {
    const w = deps(new ScriptedExecutions({}));
    await expect(watchRun(w.deps, 'r1', 'r1')).rejects.toThrow('execution r1 of run r1 does not exist');
  });
});

describe('describeRunStatus', () => {
  it("names the latest attempt and its dates, the progress and the run's error", async () => {
    await seed({ ...makeRun('r1'), status: 'failed' }, 4, 4);
    await store.setRunStatus('r1', 'failed', 'every call failed');
    const executions = new ScriptedExecutions({
      r1: [{ status: 'FAILED' }],
      'r1-2': [{ status: 'FAILED', startDate: new Date('2026-01-02T00:00:00Z'), stopDate: new Date('2026-01-02T01:00:00Z'), error: 'States.TaskFailed' }],
    });

    const lines = await describeRunStatus({ store, executions }, 'r1');

    expect(lines).toEqual([
      'run r1',
      'execution attempt 2: FAILED (started 2026-01-02T00:00:00.000Z, stopped 2026-01-02T01:00:00.000Z), error States.TaskFailed',
      'progress: failed: 4/4 answered (4 failed), 0/4 judged',
      'error: every call failed',
    ]);
  });

  it("keeps an env_broken paper's tasks out of the totals, whatever the counters say", async () => {
    await store.createRun({ ...makeRun('r1'), status: 'evaluating' });
    const tasks = [0, 1, 2, 3].map((n) => makeTask(`r1-t${n}`, { paper: n < 3 ? 'paper-a' : 'paper-b' }));
    await store.putTasks('r1', tasks);
    for (const t of tasks) await store.putCompletion(makeCompletion(t.taskId));
    // The counters count every planned and settled task, paper-b's too.
    const counters = new Counters({ total: 4, settled: 4, failed: 0, judged: 0 });
    const environments: EnvironmentChecks = {
      getImageCheck: async () => null,
      putImageCheck: async () => {},
      claimImageCheck: async () => true,
      putRunPaperEnvironment: async () => {},
      listRunPaperEnvironments: async () => [
        { paper: 'paper-a', runs: true, reason: null, image: 'sha256:1@py', checkedAt: '2026-01-01T00:00:00Z' },
        { paper: 'paper-b', runs: false, reason: 'No module named mmgen', image: 'sha256:1@py', checkedAt: '2026-01-01T00:00:00Z' },
      ],
    };
    const executions = new ScriptedExecutions({ r1: [{ status: 'RUNNING' }] });

    const lines = await describeRunStatus({ store, executions, counters, environments }, 'r1');

    expect(lines).toEqual([
      'run r1',
      'execution: RUNNING (started ?)',
      'progress: evaluating: 3/3 answered, 0/3 judged',
      'env_broken: paper-b: 1 task(s) untested and out of the scores (No module named mmgen)',
    ]);
    // Without an env_broken paper, the counters are read as before.
    expect(await readProgress(store, counters, 'r1')).toEqual({ total: 4, answered: 4, failed: 0, judged: 0 });
  });

  it('says a run is not planned when only its execution exists, and null when neither does', async () => {
    const executions = new ScriptedExecutions({ r1: [{ status: 'RUNNING' }] });
    expect(await describeRunStatus({ store, executions }, 'r1')).toEqual(['run r1', 'execution: RUNNING (started ?)', 'progress: not planned yet']);
    expect(await describeRunStatus({ store, executions }, 'r2')).toBeNull();
  });
});

describe('cancelRun', () => {
  it('marks a running run cancelled and stops nothing without now', async () => {
    await seed({ ...makeRun('r1'), status: 'generating' }, 0, 0);
    const executions = new ScriptedExecutions({ r1: [{ status: 'RUNNING' }] });

    const outcome = await cancelRun({ store, executions }, 'r1');

    expect(outcome).toMatchObject({ kind: 'cancelled', stopped: false, exitCode: 0 });
    expect((await store.getRun('r1'))?.status).toBe('cancelled');
    expect(executions.stopped).toEqual([]);
  });

  it('with now stops the latest attempt', async () => {
    await seed({ ...makeRun('r1'), status: 'evaluating' }, 0, 0);
    const executions = new ScriptedExecutions({ r1: [{ status: 'FAILED' }], 'r1-2': [{ status: 'RUNNING' }] });

    expect(await cancelRun({ store, executions }, 'r1', { now: true })).toMatchObject({ kind: 'cancelled', stopped: true });
    expect(executions.stopped).toEqual([['r1-2', 'Cancelled', 'rcb cloud cancel --now']]);
  });

  it('changes nothing on a run that ended, and reports a run that does not exist', async () => {
    await seed({ ...makeRun('r1'), status: 'succeeded' }, 0, 0);
    const executions = new ScriptedExecutions({});
    expect(await cancelRun({ store, executions }, 'r1', { now: true })).toMatchObject({ kind: 'ended', status: 'succeeded', exitCode: 1 });
    expect((await store.getRun('r1'))?.status).toBe('succeeded');
    expect(executions.stopped).toEqual([]);
    expect(await cancelRun({ store, executions }, 'nope')).toEqual({ kind: 'no-run' });
  });
});

describe('readRunResults', () => {
  it("prints the stored report when the format's default judge over all papers is asked", async () => {
    await blobs.put(`${cloudKeys.reportPrefix('r1')}overall_stats.json`, '{"stored":true}');
    expect(await readRunResults({ store, blobs }, 'r1', { format: 'official', subset: 'all' })).toEqual({ text: '{"stored":true}' });
  });

  it('gives the stored JSON report the status of the run now, not the aggregating it was written under', async () => {
    await seed({ ...makeRun('r1'), status: 'succeeded' }, 0, 0);
    await blobs.put(`${cloudKeys.reportPrefix('r1')}report.json`, JSON.stringify({ run: { runId: 'r1', status: 'aggregating' }, models: [] }));
    const results = await readRunResults({ store, blobs }, 'r1', { format: 'json', subset: 'all' });
    expect(JSON.parse(results!.text)).toEqual({ run: { runId: 'r1', status: 'succeeded' }, models: [] });
  });

  it('builds from the table for another judge or subset, with a note while the run has not succeeded; null for no run', async () => {
    await seed({ ...makeRun('r1'), status: 'evaluating' }, 0, 0);
    await blobs.put(`${cloudKeys.reportPrefix('r1')}report.json`, '{"stored":true}');
    const results = await readRunResults({ store, blobs }, 'r1', { format: 'json', judge: 'official', subset: 'all' });
    expect(results?.text).not.toContain('"stored"');
    expect(JSON.parse(results!.text)).toHaveProperty('models');
    expect(results?.note).toBe('run r1 is evaluating; these are the results so far');
    expect(await readRunResults({ store, blobs }, 'nope', { format: 'json', subset: 'safe-common' })).toBeNull();
  });
});
