/**
 * The evaluate use case: splice each task's completion into its file, run the paper's test
 * through the executor, judge, and store the verdict by task id. Tasks with a verdict are
 * skipped, so a resumed run repeats no test.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Paper, Pset, Snippet } from '../types';
import type { Candidate, RawExecution, TestExecutor } from '../executor';
import type { RunStore } from '../store';
import type { CompletionRecord, TaskRecord, Verdict } from '../records';
import { extractCompletion } from '../prompt/extract';
import { findFile, findSnippet, splice } from '../prompt/mask';
import { TEST_ENTRY } from '../pset/read-pset';
import { judge, verdictWithoutRun } from '../judge';
import type { Progress } from './progress';
import { silentProgress } from './progress';
import { FLAKY_REFERENCE } from '../scoring';

export interface EvaluateDeps {
  store: RunStore;
  executor: TestExecutor;
  progress?: Progress;
}

export interface EvaluateInput {
  runId: string;
  pset: Pset;
  /** Tasks with their completions; tasks without one are not ready and are skipped. */
  items: { task: TaskRecord; completion: CompletionRecord }[];
  onVerdict?: (task: TaskRecord, v: Verdict) => void;
  /**
   * Task ids already judged in this run. When given, the caller keeps it current and the
   * store is not listed (a pipelined run calls evaluate once per batch).
   */
  judged?: Set<string>;
  /**
   * Snippets whose reference is flaky (`rcb doctor --repeat`; keys of reference-repeat.ts
   * snippetKey): their verdicts get the flaky_reference flag, which changes no judgement.
   */
  flaky?: ReadonlySet<string>;
}

/** The key of a snippet in a set of snippets (evaluate's `flaky`). */
export const snippetKey = (paper: string, file: string, snippet: string): string => `${paper}\0${file}\0${snippet}`;

const unittestBased = new WeakMap<Paper, boolean>();

/**
 * Whether a paper's test entry point is unittest-based (then the strict judge needs tests
 * to have run). Read once per loaded paper: a pipelined run evaluates it batch by batch.
 */
export function testUsesUnittest(paper: Paper): boolean {
  let uses = unittestBased.get(paper);
  if (uses === undefined) unittestBased.set(paper, (uses = /\bunittest\b/.test(readFileSync(join(paper.dir, TEST_ENTRY), 'utf8'))));
  return uses;
}

/** A completion spliced into its snippet's file, ready for an executor (SPEC 7). */
export function candidateFor(taskId: string, paper: Paper, snippet: Snippet, code: string): Candidate {
  return {
    taskId,
    paper: paper.meta.id,
    paperDir: paper.dir,
    file: snippet.file,
    source: splice(findFile(paper, snippet.file), snippet, code),
  };
}

export async function evaluate(deps: EvaluateDeps, input: EvaluateInput): Promise<Verdict[]> {
  const progress = deps.progress ?? silentProgress;
  const papers = new Map(input.pset.papers.map((p) => [p.meta.id, p]));
  const done = input.judged ?? new Set((await deps.store.listVerdicts(input.runId)).map((v) => v.taskId));
  const verdicts: Verdict[] = [];
  const save = async (task: TaskRecord, judged: Verdict) => {
    const v = input.flaky?.has(snippetKey(task.paper, task.file, task.snippet)) ? { ...judged, flags: [...judged.flags, FLAKY_REFERENCE] } : judged;
    await deps.store.putVerdict(input.runId, v);
    done.add(task.taskId);
    verdicts.push(v);
    input.onVerdict?.(task, v);
    progress.advance('evaluate', 1);
  };

  const candidates: Candidate[] = [];
  const pending = new Map<string, { task: TaskRecord; completion: string; paper: Paper }>();
  for (const { task, completion } of input.items) {
    if (done.has(task.taskId)) continue;
    if (completion.error) {
      await save(task, verdictWithoutRun(task.taskId, 'generation_error'));
      continue;
    }
    // An answer without code is still tested, with the snippet's body removed (SPEC 6):
    // the official judge takes the test's result, the strict one fails it as no_code.
    const code = extractCompletion(completion.text);
    const paper = papers.get(task.paper);
    if (!paper) throw new Error(`task ${task.taskId} names paper "${task.paper}", which is not in the pset`);
    candidates.push(candidateFor(task.taskId, paper, findSnippet(paper, task.snippet, task.file), code));
    pending.set(task.taskId, { task, completion: code, paper });
  }
  if (!candidates.length) return verdicts;

  const onResult = async (raw: RawExecution) => {
    const p = pending.get(raw.taskId);
    if (!p) return;
    if (raw.infraError) {
      // Not a verdict on the candidate: leave the task without one so a rerun retries it.
      progress.note(`executor failed on ${p.task.paper}/${p.task.snippet} (${p.task.model}, sample ${p.task.sample}): ${raw.infraError}`);
      return;
    }
    await save(p.task, judge(raw, { completion: p.completion, testUsesUnittest: testUsesUnittest(p.paper) }));
  };
  await deps.executor.run(candidates, onResult);
  return verdicts;
}
