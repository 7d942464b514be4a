/**
 * BatchRound: one round of the cloud batch lane, what one Lambda invocation of the lane does
 * between two Wait states of the workflow (no Lambda waits on a batch). It runs the batch
 * generation use case (core/run/generate-batch.ts) with `once` over the run's batch-mode
 * tasks: submit what fits the budget, poll each pending batch once, ingest those that ended;
 * requests that came back expired or retryable go into a new batch in the same round. The
 * ledger (DynamoDB in the cloud) holds every batch between rounds, so a round that fails is
 * simply tried again and nothing is submitted twice while a batch may still answer it.
 *
 * Each answer it stores is counted on the run item, as the SQS lanes count theirs, so
 * CheckProgress sees batch answers like lane answers. When nothing is pending and tasks are
 * still open, the lane is over for them: a spent budget marks the run budget_exhausted (as
 * the interactive generator does); tasks no batch can take (fewer than the provider's
 * smallest batch) are recorded as failed answers, so the run settles instead of waiting for
 * its deadline.
 */
import type { BatchClient, BatchLedger } from '../batch';
import type { CompletionCache, RunStore } from '../store';
import type { CompletionRecord, TaskRecord } from '../records';
import type { CostModel } from '../run/generate';
import { generateBatches, type BatchEvent } from '../run/generate-batch';
import type { BatchRoundResult } from './payloads';
import type { RunContext } from './run-context';
import type { RunCounters } from './ports';
import { BATCH_CANCEL_GRACE_SEC, DEFAULT_BATCH_POLL_SCHEDULE, pollWaitSec, type PollSchedule } from './generation-polling';

export { DEFAULT_BATCH_POLL_SCHEDULE };

export interface BatchRoundDeps {
  store: RunStore;
  ledger: BatchLedger;
  /** Batch clients of the run's batch-mode models. */
  batchClients: Map<string, BatchClient>;
  /** Pricing at their batch prices. */
  batchCosts: Map<string, CostModel>;
  cache?: CompletionCache;
  /** Progress counters on the run item: each answer stored is counted. @default none */
  counters?: RunCounters;
  /** Pauses between rounds. @default DEFAULT_BATCH_POLL_SCHEDULE */
  schedule?: PollSchedule;
  onEvent?: (e: BatchEvent) => void;
  now?: () => Date;
  /**
   * The generation deadline, seconds from the execution's start (CheckProgress's): from
   * BATCH_CANCEL_GRACE_SEC before it the lane cancels its pending batches (they end, and what
   * they answered is kept, before the run is failed), and past it with batches still pending
   * it fails (BatchLaneTimeoutError), so the lane's life and history are bounded.
   * @default none
   */
  deadlineSec?: number;
}

/** The batch lane outlived the generation deadline and the grace its cancels had. */
export class BatchLaneTimeoutError extends Error {
  constructor(runId: string, pending: number) {
    super(
      `run ${runId}: the batch lane passed the generation deadline with ${pending} batch(es) still pending at the provider (cancel requested); a restarted run polls them again`,
    );
    this.name = 'BatchLaneTimeoutError';
  }
}

/**
 * Requests in one cloud batch at most: its ledger item lists the task ids and must stay
 * under DynamoDB's 400 KB (32-character ids: 5,000 make about 175 KB).
 */
export const CLOUD_MAX_BATCH_REQUESTS = 5000;

export interface BatchRoundInput {
  /** When the execution started (`$$.Execution.StartTime`). @default the run's creation */
  startedAt?: string;
}

const ZERO_USAGE = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 };

export async function batchRound(deps: BatchRoundDeps, ctx: RunContext, input: BatchRoundInput = {}): Promise<BatchRoundResult> {
  const now = deps.now ?? (() => new Date());
  const runId = ctx.run.runId;
  const run = await deps.store.getRun(runId);
  if (!run) throw new Error(`no run ${runId} in the run store`);
  const ageSec = Math.max(0, (now().getTime() - Date.parse(input.startedAt ?? run.createdAt)) / 1000);
  const waitSec = pollWaitSec(ageSec, deps.schedule ?? DEFAULT_BATCH_POLL_SCHEDULE);
  const settings = ctx.manifest.batch;
  const batchModels = new Set([...(settings?.models ?? []), ...(settings?.background ?? [])]);
  const tasks = ctx.manifest.tasks.filter((t) => batchModels.has(t.model));
  const result: BatchRoundResult = { pendingBatches: 0, open: 0, settled: 0, submitted: 0, waitSec };
  if (!tasks.length) return result;

  // Counted once each: answers stored before this round (an earlier round, a lane, another
  // run's cache) are handed on by generateBatches again, but were counted where they were stored.
  const stored = new Set((await deps.store.getCompletions(tasks.map((t) => t.taskId))).keys());
  const count = async (_t: TaskRecord, c: CompletionRecord): Promise<void> => {
    if (stored.has(c.taskId)) return;
    stored.add(c.taskId);
    result.settled++;
    await deps.counters?.addCounts(runId, { settled: 1, failed: c.error ? 1 : 0 });
  };
  const counting: Promise<void>[] = [];
  // A cancelled run, or one past its deadline, submits nothing more and cancels what is
  // pending, keeping what it answered.
  const pastDeadline = deps.deadlineSec !== undefined && ageSec > deps.deadlineSec - BATCH_CANCEL_GRACE_SEC;
  const cancel = run.status === 'cancelled' || pastDeadline;
  // A run that stopped generating (budget spent by the lanes, failed) submits nothing new but
  // collects what its pending batches answer: only their tasks are handed to the round.
  const generating = run.status === 'planned' || run.status === 'generating';
  const pendingTasks = new Set((await deps.ledger.listBatches(runId)).filter((b) => b.state === 'pending').flatMap((b) => b.taskIds));
  const roundTasks = generating || cancel ? tasks : tasks.filter((t) => pendingTasks.has(t.taskId));
  let moved = false;
  const onEvent = (e: BatchEvent): void => {
    if (e.type === 'submitted' || e.type === 'ingested') moved = true;
    deps.onEvent?.(e);
  };

  // A round that ingests requests to resubmit submits them at once, not after the next pause;
  // bounded by the rounds a task may take.
  let last: Awaited<ReturnType<typeof generateBatches>> | undefined;
  for (let i = 0; i < (settings?.maxRounds ?? 3) + 1; i++) {
    moved = false;
    last = await generateBatches(
      { store: deps.store, ledger: deps.ledger, batchClients: deps.batchClients, batchCosts: deps.batchCosts, cache: deps.cache, now, onEvent },
      {
        runId,
        pset: ctx.pset,
        template: ctx.template,
        withPaper: run.spec.withPaper,
        tasks: roundTasks,
        pollMs: 0,
        maxRounds: settings?.maxRounds,
        maxBatchRequests: CLOUD_MAX_BATCH_REQUESTS,
        cancel,
        once: true,
        onCompletion: (t, c) => void counting.push(count(t, c)),
      },
    );
    result.submitted += last.submitted;
    if (last.pendingBatches > 0 || last.open === 0 || cancel || !moved) break;
  }
  await Promise.all(counting);
  result.pendingBatches = last!.pendingBatches;
  result.open = tasks.filter((t) => !stored.has(t.taskId)).length;
  if (result.pendingBatches > 0 && deps.deadlineSec !== undefined && ageSec > deps.deadlineSec) {
    throw new BatchLaneTimeoutError(runId, result.pendingBatches);
  }

  if (result.pendingBatches === 0 && result.open > 0 && !cancel && generating) {
    if (last!.budgetExhausted) {
      // What is left does not fit the budget: the run stops generating, as a lane's refused reservation stops it.
      if (run.status === 'planned' || run.status === 'generating') await deps.store.setRunStatus(runId, 'budget_exhausted');
    } else {
      const left = await deps.store.getCompletions(tasks.map((t) => t.taskId));
      for (const t of tasks.filter((t) => !left.has(t.taskId))) {
        const record: CompletionRecord = {
          taskId: t.taskId,
          model: t.model,
          text: '',
          usage: ZERO_USAGE,
          costUsd: 0,
          finishReason: 'error',
          error: {
            kind: 'batch_unanswered',
            message: "no batch could take this request (fewer requests left than the provider's smallest batch); run the model in mode interactive",
          },
          latencyMs: 0,
          createdAt: now().toISOString(),
        };
        if (await deps.store.putCompletion(record)) await count(t, record);
      }
      result.open = 0;
    }
  }
  return result;
}
