/**
 * The generate use case: ask each task's model for an answer, under the run's budget, and
 * store the answer by task id. Finished tasks (in the run or in the cross-run cache) are
 * never asked again.
 */
import type { Paper, Pset, TokenUsage } from '../types';
import type { ModelClient, Prompt } from '../model';
import { MAYBE_BILLED, ModelError } from '../model';
import type { CompletionCache, RunStore } from '../store';
import type { CompletionRecord, TaskRecord } from '../records';
import type { PromptTemplate } from '../prompt/template';
import { buildPrompt } from '../prompt/template';
import { findSnippet } from '../prompt/mask';
import type { Progress } from './progress';
import { silentProgress } from './progress';
import { RunBudget, type BudgetScope } from './budget';

/** Prices a paid model's calls. Offline models have none. */
export interface CostModel {
  /** Most a call with this prompt can cost: prompt tokens + max output tokens at list price, USD. */
  worstCase(prompt: Prompt): number;
  /** What a response with this usage is billed, USD. */
  billed(usage: TokenUsage): number;
}

export interface GenerateDeps {
  store: RunStore;
  clients: Map<string, ModelClient>;
  costs?: Map<string, CostModel>;
  cache?: CompletionCache;
  progress?: Progress;
  now?: () => Date;
  /** Models with a budget of their own (see budget.ts); the others draw on the run's alone. */
  cappedModels?: ReadonlySet<string>;
}

export interface GenerateInput {
  runId: string;
  pset: Pset;
  template: PromptTemplate;
  withPaper: boolean;
  tasks: TaskRecord[];
  /** Calls in flight at once across models (each client may throttle further). */
  concurrency: number;
  /** Answers each reopened task had before (reopenFailedAnswers), recorded on its new answer. */
  priorAttempts?: Map<string, number>;
  /** Called with each task whose completion is stored (new or found). */
  onCompletion?: (task: TaskRecord, c: CompletionRecord) => void;
  signal?: AbortSignal;
}

export interface GenerateResult {
  /** Model calls made by this invocation. */
  called: number;
  /** Tasks answered from the run store or the cross-run cache. */
  reused: number;
  failed: number;
  /** True when some task could not be started because the budget (the run's or a model's) was spent. */
  budgetExhausted: boolean;
  /** Models whose own budget was spent (the rest of the run went on). */
  exhaustedModels?: string[];
}

const ZERO_USAGE: TokenUsage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 };

/** What one task's generation came to. */
export type TaskGeneration =
  | { outcome: 'called'; completion: CompletionRecord }
  | { outcome: 'reused'; completion: CompletionRecord }
  | { outcome: 'failed'; completion: CompletionRecord }
  /** No reservation fitted under `scope` (the model's own budget, or the run's); the task stays open. */
  | { outcome: 'budget_exhausted'; scope: BudgetScope }
  /** Cut by the signal; `assumedUsd`: what the budget was charged for the cut call (its worst case). */
  | { outcome: 'aborted'; assumedUsd: number };

/**
 * Answers a task may get in all when the earlier ones were errors: the first, and one on
 * each of two resumed runs. An error that a retry cannot cure (a refused prompt) is then
 * kept rather than paid for again and again.
 */
export const MAX_ANSWER_ATTEMPTS = 3;

/**
 * Reopen the tasks whose stored answer is an error and that have had fewer than
 * `maxAttempts` answers, so that this (resumed) run asks their models again. Returns, per
 * reopened task, the number of answers it had. Must run before the run's verdicts are
 * listed: reopening drops the task's verdict too. A store without `reopenTask` reopens
 * nothing.
 */
export async function reopenFailedAnswers(
  store: RunStore,
  runId: string,
  tasks: TaskRecord[],
  maxAttempts: number = MAX_ANSWER_ATTEMPTS,
): Promise<Map<string, number>> {
  const reopened = new Map<string, number>();
  if (!store.reopenTask) return reopened;
  const existing = await store.getCompletions(tasks.map((t) => t.taskId));
  for (const [taskId, c] of existing) {
    const answers = c.attempt ?? 1;
    if (c.error && answers < maxAttempts && (await store.reopenTask(runId, taskId))) reopened.set(taskId, answers);
  }
  return reopened;
}

export interface GenerateOneInput {
  runId: string;
  /** The task's paper, as read from the pset. */
  paper: Paper;
  template: PromptTemplate;
  withPaper: boolean;
  task: TaskRecord;
  /** Answers the task had before this one (errors, reopened). @default 0 */
  priorAttempts?: number;
  signal?: AbortSignal;
}

/**
 * One task: the cross-run cache, else reserve budget, call the model, settle, store the
 * completion (first write wins). Does not look in the run store: callers skip tasks that
 * already have a completion. Shared by the local pool and the cloud generator.
 */
export async function generateOne(
  deps: Pick<GenerateDeps, 'store' | 'clients' | 'costs' | 'cache' | 'now' | 'cappedModels'>,
  input: GenerateOneInput,
): Promise<TaskGeneration> {
  const now = deps.now ?? (() => new Date());
  const { task } = input;
  const client = deps.clients.get(task.model);
  if (!client) throw new Error(`no model client for "${task.model}"`);
  const cached = client.offline ? null : await deps.cache?.get(task.taskId);
  if (cached) {
    await deps.store.putCompletion(cached);
    return { outcome: 'reused', completion: cached };
  }
  const prompt = buildPrompt(input.template, input.paper, findSnippet(input.paper, task.snippet, task.file), input.withPaper);
  const cost = client.offline ? undefined : deps.costs?.get(task.model);
  const perAttempt = cost ? cost.worstCase(prompt) : 0;
  const budget = new RunBudget(deps.store, input.runId, deps.cappedModels);
  const refused = cost ? await budget.reserve(task.model, perAttempt) : null;
  if (refused) return { outcome: 'budget_exhausted', scope: refused };
  // An attempt that timed out or broke off may have been billed without our seeing the
  // usage: it is counted at its worst case, and the next attempt is reserved before it
  // starts, so that the budget holds however the provider bills.
  let reserved = perAttempt;
  let assumedUsd = 0;
  let budgetRanOut: BudgetScope | null = null;
  const beforeRetry = async (error: ModelError) => {
    if (!cost || !MAYBE_BILLED.has(error.kind)) return;
    budgetRanOut = await budget.reserve(task.model, perAttempt);
    if (budgetRanOut) throw error;
    reserved += perAttempt;
    assumedUsd += perAttempt;
  };
  const started = Date.now();
  let answer: Pick<CompletionRecord, 'text' | 'usage' | 'finishReason' | 'error'>;
  let billedUsd = 0;
  try {
    const res = await client.complete({
      prompt,
      sample: task.sample,
      task: { paper: task.paper, file: task.file, snippet: task.snippet },
      signal: input.signal,
      beforeRetry,
    });
    answer = { text: res.text, usage: res.usage, finishReason: res.finishReason };
    billedUsd = cost ? cost.billed(res.usage) : 0;
  } catch (err) {
    if (input.signal?.aborted) {
      // Cut by the deadline (the Lambda's, a local --timeout): the provider may bill the call
      // it was in, unseen, so it is charged at its worst case (max output at the entry's
      // price) like a timed-out attempt; a redelivery reserves anew.
      if (cost) await budget.settle(task.model, reserved, assumedUsd + perAttempt);
      return { outcome: 'aborted', assumedUsd: cost ? assumedUsd + perAttempt : 0 };
    }
    const e = err instanceof ModelError ? err : new ModelError('other', err instanceof Error ? err.message : String(err));
    if (cost && MAYBE_BILLED.has(e.kind)) assumedUsd += perAttempt;
    if (budgetRanOut) {
      // Not an answer: the task stays open for a resumed run with a higher budget.
      await budget.settle(task.model, reserved, assumedUsd);
      return { outcome: 'budget_exhausted', scope: budgetRanOut };
    }
    answer = { text: '', usage: ZERO_USAGE, finishReason: 'error', error: { kind: e.kind, message: e.message, status: e.status } };
  }
  const record: CompletionRecord = {
    taskId: task.taskId,
    model: task.model,
    ...answer,
    costUsd: billedUsd + assumedUsd,
    ...(assumedUsd ? { assumedCostUsd: assumedUsd } : {}),
    latencyMs: Date.now() - started,
    createdAt: now().toISOString(),
    ...(input.priorAttempts ? { attempt: input.priorAttempts + 1 } : {}),
  };
  // Settle before storing, so spend is never under-counted if the store write fails.
  if (cost) await budget.settle(task.model, reserved, record.costUsd);
  await deps.store.putCompletion(record);
  if (!client.offline && !record.error) await deps.cache?.put(record);
  return { outcome: record.error ? 'failed' : 'called', completion: record };
}

export async function generate(deps: GenerateDeps, input: GenerateInput): Promise<GenerateResult> {
  const progress = deps.progress ?? silentProgress;
  const result: GenerateResult = { called: 0, reused: 0, failed: 0, budgetExhausted: false };
  const papers = new Map(input.pset.papers.map((p) => [p.meta.id, p]));

  const existing = await deps.store.getCompletions(input.tasks.map((t) => t.taskId));
  const todo: TaskRecord[] = [];
  for (const t of input.tasks) {
    const c = existing.get(t.taskId);
    if (c) {
      result.reused++;
      input.onCompletion?.(t, c);
    } else todo.push(t);
  }
  progress.start('generate', input.tasks.length);
  progress.advance('generate', result.reused);

  // Prompt caching: the tasks of one (model, paper) share a prefix (instructions + paper).
  // The first call of each group goes alone and writes the provider's cache; the group's
  // other calls wait for it and then read the prefix from the cache instead of paying for it.
  const firstCalls = new Map<string, Promise<void>>();
  const warmPrefix = async (task: TaskRecord): Promise<(() => void) | undefined> => {
    const client = deps.clients.get(task.model);
    if (!client || client.offline) return undefined;
    const key = JSON.stringify([task.model, task.paper]);
    const pending = firstCalls.get(key);
    if (pending) {
      await pending;
      return undefined;
    }
    let release!: () => void;
    firstCalls.set(key, new Promise<void>((resolve) => (release = resolve)));
    return release;
  };

  // A reservation that does not fit while other calls hold theirs may fit once they settle
  // (most calls cost far less than their worst case): the budget is spent only when it
  // does not fit with nothing of ours in flight.
  let active = 0;
  const activeByModel = new Map<string, number>();
  const bump = (model: string, d: number) => activeByModel.set(model, (activeByModel.get(model) ?? 0) + d);
  /** Models whose own budget is spent: their remaining tasks stay open, the others go on. */
  const exhaustedModels = new Set<string>();
  let runExhausted = false;
  let settled: Array<() => void> = [];
  const nextSettle = () => new Promise<void>((resolve) => settled.push(resolve));
  const onSettle = () => {
    const waiting = settled;
    settled = [];
    waiting.forEach((wake) => wake());
  };

  let next = 0;
  const worker = async () => {
    while (next < todo.length && !input.signal?.aborted) {
      const task = todo[next++];
      if (exhaustedModels.has(task.model)) continue;
      const paper = papers.get(task.paper);
      if (!paper) throw new Error(`task ${task.taskId} names paper "${task.paper}", which is not in the pset`);
      let done: TaskGeneration;
      for (;;) {
        const releaseGroup = await warmPrefix(task);
        active++;
        bump(task.model, 1);
        done = await generateOne(deps, {
          runId: input.runId,
          paper,
          template: input.template,
          withPaper: input.withPaper,
          task,
          priorAttempts: input.priorAttempts?.get(task.taskId),
          signal: input.signal,
        }).finally(() => {
          active--;
          bump(task.model, -1);
          releaseGroup?.();
        });
        // Only a call that held a reservation frees budget. A refused one waking the others
        // would let two refused workers wake each other for ever (no I/O between them).
        if (done.outcome !== 'budget_exhausted') onSettle();
        if (done.outcome !== 'budget_exhausted' || runExhausted || input.signal?.aborted) break;
        const inFlight = done.scope === 'model' ? (activeByModel.get(task.model) ?? 0) : active;
        if (inFlight === 0 || exhaustedModels.has(task.model)) break;
        await nextSettle();
      }
      if (done.outcome === 'aborted') break;
      if (done.outcome === 'budget_exhausted' && done.scope === 'model') {
        // This model's own budget is spent; the run goes on with the others.
        exhaustedModels.add(task.model);
        result.budgetExhausted = true;
        result.exhaustedModels = [...exhaustedModels];
        onSettle();
        continue;
      }
      if (done.outcome === 'budget_exhausted') {
        // Nothing more may start; calls already in flight finish and settle.
        runExhausted = true;
        result.budgetExhausted = true;
        next = todo.length;
        onSettle();
        break;
      }
      if (done.outcome === 'reused') {
        result.reused++;
        input.onCompletion?.(task, done.completion);
        progress.advance('generate', 1);
        continue;
      }
      result.called++;
      if (done.outcome === 'failed') result.failed++;
      input.onCompletion?.(task, done.completion);
      progress.advance('generate', 1, task.model);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(input.concurrency, todo.length)) }, worker));
  progress.end('generate');
  return result;
}
