/**
 * Batch generation: a model's open tasks go to its provider's batch API in rounds. Each
 * round submits the tasks that no pending batch holds, with the worst case of every
 * request reserved at the batch price; polls until the batch ends; ingests its results
 * (answers stored and settled from their usage; requests that expired, were cancelled or
 * failed for a reason a retry can cure stay open for the next round, or go to the
 * interactive client when the caller allows it). A batch is written to the ledger before
 * it is submitted and at each change, so a restarted rcb polls the batches it left pending
 * and never submits their requests again while they may still be answered.
 */
import type { Paper, Pset } from '../types';
import type { BatchClient, BatchItemResult, BatchLedger, BatchRecord, BatchRequest } from '../batch';
import { ModelError, type ModelErrorKind } from '../model';
import type { CompletionCache, RunStore } from '../store';
import type { CompletionRecord, TaskRecord } from '../records';
import type { PromptTemplate } from '../prompt/template';
import { buildPrompt } from '../prompt/template';
import { findSnippet } from '../prompt/mask';
import type { CostModel, GenerateDeps } from './generate';
import { generateOne } from './generate';
import { RunBudget } from './budget';
import type { Progress } from './progress';
import { silentProgress } from './progress';

export interface BatchGenerateDeps {
  store: RunStore;
  ledger: BatchLedger;
  /** Batch clients by model id. */
  batchClients: Map<string, BatchClient>;
  /** Pricing at each model's batch prices. */
  batchCosts: Map<string, CostModel>;
  /** Interactive clients and costs, for retry_interactively. */
  interactive?: Pick<GenerateDeps, 'clients' | 'costs'>;
  cache?: CompletionCache;
  cappedModels?: ReadonlySet<string>;
  progress?: Progress;
  now?: () => Date;
  /** Waits between polls; tests pass a fake. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Told of each submit, poll and ingest (for progress, the bench's transition count). */
  onEvent?: (e: BatchEvent) => void;
}

export type BatchEvent =
  | { type: 'submitted'; model: string; batchKey: string; providerBatchId: string; requests: number; reservedUsd: number }
  | { type: 'submit_failed'; model: string; error: string }
  | { type: 'polled'; model: string; providerBatchId: string; state: string }
  | { type: 'ingested'; model: string; providerBatchId: string; succeeded: number; reopened: number; failed: number; spentUsd: number }
  | { type: 'cancel_requested'; model: string; providerBatchId: string };

export interface BatchGenerateInput {
  runId: string;
  pset: Pset;
  template: PromptTemplate;
  withPaper: boolean;
  /** The tasks of batch-mode models. */
  tasks: TaskRecord[];
  /** Pause between two polls of the pending batches, ms. */
  pollMs: number;
  /** Batches a task may go through before it is given up (recorded as an error). @default 3 */
  maxRounds?: number;
  /** Requests that a batch did not answer are asked interactively instead of in the next batch. */
  retryInteractively?: boolean;
  /** Requests in one batch at most. @default 10000 */
  maxBatchRequests?: number;
  /**
   * The run's reservations were dropped before this call (a local runner resuming after a
   * crash): the pending batches' are then held again. Otherwise they are still held.
   */
  reservationsCleared?: boolean;
  /** Cancel the pending batches, ingest what they answered, submit nothing more. */
  cancel?: boolean;
  /**
   * One round and return: submit what can be submitted, poll each pending batch once,
   * ingest those that ended; no waiting. What a step of a state machine calls, with the
   * wait between rounds in the state machine (no Lambda waits on a batch).
   */
  once?: boolean;
  onCompletion?: (task: TaskRecord, c: CompletionRecord) => void;
  signal?: AbortSignal;
}

export interface BatchGenerateResult {
  /** Answers stored from batch results (and interactive retries). */
  answered: number;
  failed: number;
  reused: number;
  budgetExhausted: boolean;
  exhaustedModels: string[];
  /** Batches submitted by this invocation. */
  submitted: number;
  /** Polls of pending batches. */
  polls: number;
  /** Tasks left open (a cancel, or rcb stopped). */
  open: number;
  /** Batches still pending at the provider when this call returned. */
  pendingBatches: number;
  cancelled: boolean;
}

/** Errors a batch returns that no retry cures: recorded on the task, as interactively. */
const FINAL_KINDS: ReadonlySet<ModelErrorKind> = new Set(['bad_request', 'auth', 'context_length', 'other']);

const ZERO_USAGE = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 };

export async function generateBatches(deps: BatchGenerateDeps, input: BatchGenerateInput): Promise<BatchGenerateResult> {
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? defaultSleep;
  const progress = deps.progress ?? silentProgress;
  const budget = new RunBudget(deps.store, input.runId, deps.cappedModels);
  const maxRounds = input.maxRounds ?? 3;
  const maxRequests = input.maxBatchRequests ?? 10_000;
  const papers = new Map(input.pset.papers.map((p) => [p.meta.id, p]));
  const byId = new Map(input.tasks.map((t) => [t.taskId, t]));
  const result: BatchGenerateResult = {
    answered: 0,
    failed: 0,
    reused: 0,
    budgetExhausted: false,
    exhaustedModels: [],
    submitted: 0,
    polls: 0,
    open: 0,
    pendingBatches: 0,
    cancelled: !!input.cancel,
  };
  const exhausted = new Set<string>();
  /** Models whose open requests are fewer than their provider's smallest batch. */
  const stalled = new Set<string>();
  let runExhausted = false;
  const withoutClient = [...new Set(input.tasks.map((t) => t.model))].filter((m) => !deps.batchClients.has(m) || !deps.batchCosts.has(m));
  if (withoutClient.length) throw new Error(`no batch client or batch prices for ${withoutClient.join(', ')}`);

  // Answers already stored (an earlier invocation) are handed on once.
  const stored = await deps.store.getCompletions(input.tasks.map((t) => t.taskId));
  for (const t of input.tasks) {
    let c = stored.get(t.taskId);
    // An answer bought by another run (either mode: the task id is the same) is not bought again.
    if (!c && !input.cancel) {
      const cached = await deps.cache?.get(t.taskId);
      if (cached) {
        await deps.store.putCompletion(cached);
        stored.set(t.taskId, (c = cached));
      }
    }
    if (c) {
      result.reused++;
      input.onCompletion?.(t, c);
    }
  }
  const answered = new Set(stored.keys());

  // Batches left pending by an earlier rcb: if their reservations died with it (a local
  // runner drops stale reservations), they are held again before anything new is sent.
  const held = new Map<string, number>();
  /** The model of each batch in `held`: the pending batches whose reservations are held. */
  const heldModel = new Map<string, string>();
  for (let b of await deps.ledger.listBatches(input.runId)) {
    if (b.state !== 'pending' && b.state !== 'submitting') continue;
    if (b.state === 'submitting') {
      // rcb stopped inside the submit call, or before the ledger recorded the provider's id:
      // the provider may hold the batch (and bill it). It is looked up by the intent id sent
      // with it; found, it is pending as any other, so its requests are not sent again.
      const client = deps.batchClients.get(b.model);
      const found = b.intentId && client?.findByIntent ? await client.findByIntent(b.intentId, input.signal) : null;
      if (!found) {
        // Never accepted: its reservation (still held unless the run's were cleared) goes.
        if (!input.reservationsCleared) await budget.settle(b.model, b.reservedUsd, 0);
        await deps.ledger.putBatch({
          ...b,
          state: 'not_submitted',
          endedAt: now().toISOString(),
          providerState: `unknown: rcb stopped while submitting${b.intentId && client?.findByIntent ? '; the provider has no batch of its intent id' : ''}`,
        });
        continue;
      }
      b = { ...b, providerBatchId: found, state: 'pending', providerState: 'found by its intent id after a restart' };
      await deps.ledger.putBatch(b);
    }
    heldModel.set(b.batchKey, b.model);
    if (!input.reservationsCleared) held.set(b.batchKey, b.reservedUsd);
    else held.set(b.batchKey, (await budget.reserve(b.model, b.reservedUsd)) === null ? b.reservedUsd : 0);
  }

  const roundsOf = (batches: BatchRecord[]): Map<string, number> => {
    const rounds = new Map<string, number>();
    for (const b of batches) if (b.state === 'ingested') for (const id of b.taskIds) rounds.set(id, (rounds.get(id) ?? 0) + 1);
    return rounds;
  };

  const store = async (task: TaskRecord, record: CompletionRecord) => {
    await deps.store.putCompletion(record);
    if (!record.error) await deps.cache?.put(record);
    answered.add(task.taskId);
    if (record.error) result.failed++;
    else result.answered++;
    input.onCompletion?.(task, record);
    progress.advance('generate', 1, task.model);
  };

  const giveUp = async (task: TaskRecord, message: string) =>
    store(task, {
      taskId: task.taskId,
      model: task.model,
      text: '',
      usage: ZERO_USAGE,
      costUsd: 0,
      finishReason: 'error',
      error: { kind: 'batch_unanswered', message },
      latencyMs: 0,
      createdAt: now().toISOString(),
    });

  let seq = (await deps.ledger.listBatches(input.runId)).length;
  for (;;) {
    if (input.signal?.aborted) break;
    const batches = await deps.ledger.listBatches(input.runId);
    const pending = batches.filter((b) => b.state === 'pending');
    const inPending = new Set(pending.flatMap((b) => b.taskIds));
    const rounds = roundsOf(batches);
    const open = input.tasks.filter((t) => !answered.has(t.taskId) && !inPending.has(t.taskId));

    if (input.cancel) {
      for (const b of pending.filter((b) => !b.cancelRequested && !input.signal?.aborted)) {
        await deps.batchClients.get(b.model)!.cancel(b.providerBatchId!, input.signal);
        await deps.ledger.putBatch({ ...b, cancelRequested: true });
        deps.onEvent?.({ type: 'cancel_requested', model: b.model, providerBatchId: b.providerBatchId! });
      }
    } else {
      // Tasks through their last round: interactively when allowed, else given up.
      const toSubmit: TaskRecord[] = [];
      for (const t of open) {
        const r = rounds.get(t.taskId) ?? 0;
        if (r > 0 && input.retryInteractively && deps.interactive) await askInteractively(t);
        else if (r >= maxRounds) await giveUp(t, `no answer after ${r} batch(es) (expired, cancelled or failed in each)`);
        else if (!exhausted.has(t.model) && !stalled.has(t.model) && !runExhausted) toSubmit.push(t);
      }
      for (const [model, tasks] of groupBy(toSubmit, (t) => t.model)) {
        const limits = deps.batchClients.get(model)!.limits;
        const perBatch = Math.min(maxRequests, limits?.maxRequests ?? Infinity);
        let rest = tasks;
        while (rest.length && !exhausted.has(model) && !stalled.has(model) && !runExhausted) {
          const sent = await submit(model, rest.slice(0, perBatch), limits?.maxPromptChars ?? Infinity);
          if (!sent) break;
          rest = rest.slice(sent);
        }
      }
    }

    const stillPending = (await deps.ledger.listBatches(input.runId)).filter((b) => b.state === 'pending');
    if (!stillPending.length) {
      const left = input.tasks.filter((t) => !answered.has(t.taskId));
      // Done, or nothing more can be sent: a cancel, the budget, or tasks that fit nowhere.
      if (!left.length || input.cancel || runExhausted || left.every((t) => exhausted.has(t.model) || stalled.has(t.model)) || input.once) break;
      continue;
    }
    for (const b of stillPending) {
      if (input.signal?.aborted) break;
      const client = deps.batchClients.get(b.model)!;
      try {
        const status = await client.poll(b.providerBatchId!, input.signal);
        result.polls++;
        deps.onEvent?.({ type: 'polled', model: b.model, providerBatchId: b.providerBatchId!, state: status.providerState });
        if (status.state === 'ended') await ingest(b, client, status.providerState);
        else if (status.providerState !== b.providerState) await deps.ledger.putBatch({ ...b, providerState: status.providerState });
      } catch (e) {
        // Stopped, or the provider did not answer this poll: the batch stays pending (in the
        // ledger too) and is polled again, now or by the next rcb.
        if (input.signal?.aborted) break;
        if (!(e instanceof ModelError && e.retryable)) throw e;
        progress.note(`batch ${b.providerBatchId} of ${b.model}: poll failed (${e.message}); polling again`);
      }
    }
    if (input.once) break;
    if ((await deps.ledger.listBatches(input.runId)).some((b) => b.state === 'pending')) await sleep(input.pollMs, input.signal).catch(() => undefined);
  }
  result.pendingBatches = (await deps.ledger.listBatches(input.runId)).filter((b) => b.state === 'pending').length;
  result.open = input.tasks.filter((t) => !answered.has(t.taskId)).length;
  result.exhaustedModels = [...exhausted];
  result.budgetExhausted = runExhausted || exhausted.size > 0;
  return result;

  /** Submit one batch of the first of `tasks` that fit (size, budget); resolves with how many went. */
  async function submit(model: string, tasks: TaskRecord[], maxPromptChars: number): Promise<number> {
    const cost = deps.batchCosts.get(model)!;
    // The requests the batch may hold by size, each with its worst case at the batch price.
    const candidates: Array<{ request: BatchRequest; worst: number }> = [];
    let chars = 0;
    for (const t of tasks) {
      const paper = papers.get(t.paper);
      if (!paper) throw new Error(`task ${t.taskId} names paper "${t.paper}", which is not in the pset`);
      const prompt = buildPrompt(input.template, paper as Paper, findSnippet(paper, t.snippet, t.file), input.withPaper);
      if (candidates.length && chars + prompt.text.length > maxPromptChars) break;
      chars += prompt.text.length;
      candidates.push({ request: { customId: t.taskId, prompt }, worst: cost.worstCase(prompt) });
    }
    // One reservation for the whole batch when it fits; else request by request, as many as fit.
    const requests: BatchRequest[] = [];
    let reservedUsd = 0;
    const total = candidates.reduce((a, c) => a + c.worst, 0);
    if (candidates.length > 1 && (await budget.reserve(model, total)) === null) {
      requests.push(...candidates.map((c) => c.request));
      reservedUsd = total;
    } else {
      for (const c of candidates) {
        const refused = await budget.reserve(model, c.worst);
        if (refused) {
          // What did not fit may fit once a pending batch (of any model for the run's cap, of
          // this model for its own) settles below its worst case.
          const waiting = [...heldModel.values()].some((m) => refused === 'run' || m === model);
          if (!waiting && !requests.length) {
            if (refused === 'run') runExhausted = true;
            else exhausted.add(model);
          }
          break;
        }
        reservedUsd += c.worst;
        requests.push(c.request);
      }
    }
    const min = deps.batchClients.get(model)!.limits?.minRequests ?? 1;
    if (requests.length < min) {
      await budget.settle(model, reservedUsd, 0);
      if (requests.length && ![...heldModel.values()].includes(model)) {
        progress.note(`${model}: ${requests.length} request(s) left, fewer than the ${min} a batch needs; they stay open (run them in mode interactive)`);
        stalled.add(model);
      }
      return 0;
    }
    const record: BatchRecord = {
      batchKey: `${model}#${++seq}`,
      runId: input.runId,
      model,
      providerBatchId: null,
      taskIds: requests.map((r) => r.customId),
      reservedUsd,
      state: 'submitting',
      submittedAt: now().toISOString(),
      // Unique per submit: the run, the batch key and the moment (a batch key is reused only after a not_submitted one).
      intentId: `rcb-${input.runId}-${seq}-${now().getTime().toString(36)}`,
    };
    await deps.ledger.putBatch(record);
    let providerBatchId: string;
    try {
      providerBatchId = await deps.batchClients.get(model)!.submit(requests, input.signal, record.intentId);
    } catch (e) {
      await budget.settle(model, reservedUsd, 0);
      await deps.ledger.putBatch({ ...record, state: 'not_submitted', endedAt: now().toISOString(), providerState: (e as Error).message });
      deps.onEvent?.({ type: 'submit_failed', model, error: (e as Error).message });
      if (input.signal?.aborted) return 0;
      throw e;
    }
    await deps.ledger.putBatch({ ...record, providerBatchId, state: 'pending' });
    held.set(record.batchKey, reservedUsd);
    heldModel.set(record.batchKey, model);
    result.submitted++;
    deps.onEvent?.({ type: 'submitted', model, batchKey: record.batchKey, providerBatchId, requests: requests.length, reservedUsd });
    return requests.length;
  }

  async function ingest(b: BatchRecord, client: BatchClient, providerState: string): Promise<void> {
    const results = new Map<string, BatchItemResult>((await client.results(b.providerBatchId!, input.signal)).map((r) => [r.customId, r]));
    const cost = deps.batchCosts.get(b.model)!;
    const latencyMs = Date.now() - Date.parse(b.submittedAt);
    let spentUsd = 0;
    let reopened = 0;
    let failed = 0;
    let succeeded = 0;
    for (const taskId of b.taskIds) {
      const task = byId.get(taskId);
      const r = results.get(taskId);
      if (!task || answered.has(taskId)) continue;
      if (r?.outcome === 'succeeded') {
        const costUsd = cost.billed(r.response.usage);
        spentUsd += costUsd;
        succeeded++;
        await store(task, {
          taskId,
          model: b.model,
          text: r.response.text,
          usage: r.response.usage,
          costUsd,
          finishReason: r.response.finishReason,
          latencyMs,
          createdAt: now().toISOString(),
          batchId: b.providerBatchId!,
        });
      } else if (r?.outcome === 'errored' && FINAL_KINDS.has(r.error.kind)) {
        failed++;
        await store(task, {
          taskId,
          model: b.model,
          text: '',
          usage: ZERO_USAGE,
          costUsd: 0,
          finishReason: 'error',
          error: { kind: r.error.kind, message: r.error.message },
          latencyMs,
          createdAt: now().toISOString(),
          batchId: b.providerBatchId!,
        });
      } else reopened++; // expired, cancelled, not reported, or an error a retry may cure: open for the next round
    }
    // Settle before the ledger says ingested: a crash in between settles again at most the
    // answers not yet stored (stored ones are skipped above), never loses the spend.
    await budget.settle(b.model, held.get(b.batchKey) ?? 0, spentUsd);
    held.delete(b.batchKey);
    heldModel.delete(b.batchKey);
    await deps.ledger.putBatch({ ...b, state: 'ingested', providerState, endedAt: now().toISOString() });
    deps.onEvent?.({ type: 'ingested', model: b.model, providerBatchId: b.providerBatchId!, succeeded, reopened, failed, spentUsd });
  }

  async function askInteractively(task: TaskRecord): Promise<void> {
    const paper = papers.get(task.paper)!;
    const done = await generateOne(
      { store: deps.store, clients: deps.interactive!.clients, costs: deps.interactive!.costs, cache: deps.cache, now, cappedModels: deps.cappedModels },
      { runId: input.runId, paper, template: input.template, withPaper: input.withPaper, task, signal: input.signal },
    );
    if (done.outcome === 'called' || done.outcome === 'failed' || done.outcome === 'reused') {
      answered.add(task.taskId);
      if (done.outcome === 'failed') result.failed++;
      else result.answered++;
      input.onCompletion?.(task, done.completion);
      progress.advance('generate', 1, task.model);
    } else if (done.outcome === 'budget_exhausted') {
      if (done.scope === 'run') runExhausted = true;
      else exhausted.add(task.model);
    }
  }
}

function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    out.set(k, [...(out.get(k) ?? []), it]);
  }
  return out;
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
