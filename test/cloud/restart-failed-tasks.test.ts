/**
 * A finished or failed cloud run started again asks again for the answers that were errors
 * (dead-lettered, a provider failure), under the local run's cap per task, and never for a
 * task that has an answer: PlanRun reopens them and carries the answers they had, the
 * generator and the dead-letter consumer count the new one, and `rcb cloud run` starts a new
 * attempt of a succeeded run only when it has such tasks.
 */
import type { CompletionRecord } from '../../core/records';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { generateTask } from '../../core/cloud/generate-task';
import { settleDeadLetter } from '../../core/cloud/settle-dead-letter';
import { RunContextCache } from '../../core/cloud/run-context';
import { retryableFailedTasks } from '../../core/cloud/failed-tasks';
import { startOrFollow, type ExecutionPort, type ExecutionStatus } from '../../core/cloud/execution-attempts';
import { MAX_ANSWER_ATTEMPTS } from '../../core/run/generate';
import { makeCompletion, makeVerdict } from '../aws/records';
import { cloudFixture, type CloudFixture } from './cloud-fixture';

function failed(taskId: string, model: string, attempt?: number): CompletionRecord {
  return {
    ...makeCompletion(taskId, ''),
    model,
    costUsd: 0,
    finishReason: 'error',
    error: { kind: 'dead_lettered', message: 'dead-lettered' },
    ...(attempt ? { attempt } : {}),
  };
}

/** A planned run of one paper whose first three tasks failed (1, 2 and MAX answers) and the rest are answered, each judged. */
async function finishedWithFailures(): Promise<{ f: CloudFixture; ids: string[] }> {
  const f = await cloudFixture({ papers: ['temperedattn'] });
  await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
  const tasks = await f.store.listTasks(f.input.runId);
  const ids = tasks.map((t) => t.taskId);
  const attempts = [undefined, 2, MAX_ANSWER_ATTEMPTS];
  for (const [i, t] of tasks.entries()) {
    await f.store.putCompletion(i < 3 ? failed(t.taskId, t.model, attempts[i]) : { ...makeCompletion(t.taskId), model: t.model });
    await f.store.putVerdict(f.input.runId, { ...makeVerdict(t.taskId), ...(i < 3 ? { failureClass: 'generation_error' } : {}) } as never);
  }
  await f.store.setRunStatus(f.input.runId, 'succeeded');
  f.queue.sent.length = 0;
  return { f, ids };
}

describe('PlanRun of a run started again', () => {
  it('reopens the tasks whose answer was an error under the cap, each message carrying the answers it had; keeps the rest', async () => {
    // Prepare
    const { f, ids } = await finishedWithFailures();
    expect(ids.length).toBeGreaterThan(3);

    // Act
    const plan = await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);

    // Assess: the first two go again; the one at the cap and every answered task do not.
    expect(plan.enqueued).toBe(2);
    expect(f.queue.sent.map((s) => s.message)).toEqual([
      { runId: f.input.runId, taskId: ids[0], priorAttempts: 1 },
      { runId: f.input.runId, taskId: ids[1], priorAttempts: 2 },
    ]);
    const completions = await f.store.getCompletions(ids);
    expect([completions.has(ids[0]), completions.has(ids[1]), completions.get(ids[2])?.attempt]).toEqual([false, false, MAX_ANSWER_ATTEMPTS]);
    expect(ids.slice(3).every((id) => completions.get(id) && !completions.get(id)!.error)).toBe(true);
    // Their generation_error verdicts go with them, so the new answers are judged.
    const judged = new Set((await f.store.listVerdicts(f.input.runId)).map((v) => v.taskId));
    expect([judged.has(ids[0]), judged.has(ids[1]), judged.has(ids[2])]).toEqual([false, false, true]);
    expect((await f.store.getRun(f.input.runId))?.status).toBe('generating');
  });

  it('records the new answer as the next attempt, so the cap holds across restarts', async () => {
    // Prepare
    const { f, ids } = await finishedWithFailures();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const contexts = new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir });
    const [first, second] = f.queue.sent.map((s) => s.message);

    // Act: the first is answered, the second dead-lettered again.
    const answered = await generateTask({ store: f.store, clients: f.clients }, await contexts.get(first.runId), first);
    const tasks = new Map((await f.store.listTasks(f.input.runId)).map((t) => [t.taskId, t]));
    const settled = await settleDeadLetter({ store: f.store, tasksOf: async () => tasks }, second, 3);

    // Assess
    expect([answered.outcome, settled]).toEqual([expect.stringMatching(/^(called|failed)$/), 'settled']);
    const completions = await f.store.getCompletions(ids);
    expect(completions.get(ids[0])?.attempt).toBe(2);
    expect(completions.get(ids[1])).toMatchObject({ attempt: 3, error: { kind: 'dead_lettered' } });
    // Now at the cap: a third start asks for nothing more of it.
    expect(await retryableFailedTasks(f.store, f.input.runId)).toEqual(completions.get(ids[0])?.error ? [ids[0]] : []);
    f.queue.sent.length = 0;
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    expect(f.queue.sent.map((s) => s.message.taskId)).not.toContain(ids[1]);
  });

  it('lists the retryable failed tasks of a run: errors under the cap only', async () => {
    const { f, ids } = await finishedWithFailures();
    expect(await retryableFailedTasks(f.store, f.input.runId)).toEqual([ids[0], ids[1]]);
    expect(await retryableFailedTasks(f.store, f.input.runId, 2)).toEqual([ids[0]]);
  });
});

describe('startOrFollow of a run whose latest execution succeeded', () => {
  class Executions implements ExecutionPort {
    constructor(readonly names: Map<string, ExecutionStatus>) {}
    async start(name: string): Promise<boolean> {
      if (this.names.has(name)) return false;
      this.names.set(name, 'RUNNING');
      return true;
    }
    async status(name: string): Promise<ExecutionStatus | null> {
      return this.names.get(name) ?? null;
    }
  }

  it('follows it unless the caller says the run has failed tasks to ask again, and then starts the next name', async () => {
    const follow = new Executions(new Map([['r', 'SUCCEEDED']]));
    expect(await startOrFollow(follow, 'r')).toEqual({ name: 'r', attempt: 1, started: false, earlier: [] });
    expect(await startOrFollow(follow, 'r', { restartSucceeded: async () => false })).toMatchObject({ name: 'r', started: false });

    const restart = new Executions(
      new Map([
        ['r', 'FAILED'],
        ['r-2', 'SUCCEEDED'],
      ]),
    );
    expect(await startOrFollow(restart, 'r', { restartSucceeded: async () => true })).toEqual({
      name: 'r-3',
      attempt: 3,
      started: true,
      earlier: ['FAILED', 'SUCCEEDED'],
    });
  });

  it('follows a later attempt that restarted it, without asking again', async () => {
    const executions = new Executions(
      new Map([
        ['r', 'SUCCEEDED'],
        ['r-2', 'RUNNING'],
      ]),
    );
    let asked = 0;
    const attempt = await startOrFollow(executions, 'r', { restartSucceeded: async () => (asked++, true) });
    expect(attempt).toEqual({ name: 'r-2', attempt: 2, started: false, earlier: ['SUCCEEDED'] });
    expect(asked).toBe(0);
  });
});
