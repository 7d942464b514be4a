/**
 * One task as a reader drills into it (`rcb show`, the HTML report): the model's answer,
 * the diff its splice makes to the annotated file, the verdict and the test log, and the
 * prompt. The store keeps answers and verdicts; the diff and the prompt are rebuilt from
 * the pset, and only where the pset and template are the very ones the run used (the
 * task's id, recomputed, must match), so a changed pset never shows a diff that was not run.
 */
import type { Judge, Paper, Pset, Snippet } from '../types';
import { caughtCheat } from '../judge';
import type { CompletionRecord, RunRecord, TaskRecord, Verdict } from '../records';
import type { LoadedRun } from './loaded-run';
import type { PromptTemplate } from '../prompt/template';
import { buildPrompt } from '../prompt/template';
import { extractCompletion } from '../prompt/extract';
import { completionLines, findFile } from '../prompt/mask';
import { planTasks } from '../run/plan';
import { envBrokenPapers, passed } from '../scoring';

/** Where the diff and the prompt come from; either may be missing (another machine, the cloud). */
export interface TaskSources {
  pset: Pset | null;
  /** Why there is no pset, for the reader. */
  psetNote?: string;
  template: PromptTemplate | null;
}

export interface TaskDetail {
  task: TaskRecord;
  completion: CompletionRecord | null;
  /** The code read from the answer (SPEC 6); null without an answer. */
  answer: string | null;
  verdict: Verdict | null;
  /** Under the report's judge; false for a task with no verdict yet. */
  passed: boolean;
  /**
   * Why the task's paper cannot run in the run's environment, when it cannot (env_broken):
   * the task is out of the scores, neither passed nor failed. Null otherwise.
   */
  envBroken: string | null;
  /** Unified diff of the annotated file after the splice; null when the pset is not at hand. */
  diff: string | null;
  /** The prompt's text after the shared prefix (instructions + paper), and the prefix's length. */
  promptTail: string | null;
  promptPrefixChars: number;
  /** Why the diff or the prompt is missing. */
  notes: string[];
}

const CONTEXT = 3;

/**
 * The unified diff of splicing `completion` into the snippet: the body lines between the
 * markers replaced, so one hunk with a few lines of context says it all.
 */
export function spliceDiff(paper: Paper, snippet: Snippet, completion: string): string {
  const file = findFile(paper, snippet.file);
  const start = snippet.openLine; // 0-based index of the first body line
  const removed = file.lines.slice(start, snippet.closeLine - 1);
  const added = completionLines(completion);
  const before = file.lines.slice(Math.max(0, start - CONTEXT), start);
  const after = file.lines.slice(snippet.closeLine - 1, snippet.closeLine - 1 + CONTEXT);
  const oldStart = start - before.length + 1;
  const range = (from: number, count: number) => `${count === 0 ? from - 1 : from},${count}`;
  return `${[
    `--- a/${snippet.paper}/${snippet.file}`,
    `+++ b/${snippet.paper}/${snippet.file}`,
    `@@ -${range(oldStart, before.length + removed.length + after.length)} +${range(oldStart, before.length + added.length + after.length)} @@`,
    ...before.map((l) => ` ${l}`),
    ...removed.map((l) => `-${l}`),
    ...added.map((l) => `+${l}`),
    ...after.map((l) => ` ${l}`),
  ].join('\n')}\n`;
}

/** Task ids the pset at hand would give this run: a task outside it was run on other content. */
function matchingTaskIds(run: RunRecord, pset: Pset | null): Set<string> {
  if (!pset) return new Set();
  return new Set(planTasks(pset, run.spec).map((t) => t.taskId));
}

export function taskDetails(loaded: LoadedRun, judge: Judge, sources: TaskSources, tasks: TaskRecord[] = loaded.tasks): TaskDetail[] {
  const { run } = loaded;
  const matching = matchingTaskIds(run, sources.pset);
  const papers = new Map((sources.pset?.papers ?? []).map((p) => [p.meta.id, p]));
  const templateFits = !!sources.template && sources.template.digest === run.spec.promptTemplateDigest;
  const broken = envBrokenPapers(run);
  return tasks.map((task) => {
    const completion = loaded.completions.get(task.taskId) ?? null;
    const verdict = loaded.verdicts.get(task.taskId) ?? null;
    const answer = completion && !completion.error ? extractCompletion(completion.text) : null;
    const notes: string[] = [];
    let diff: string | null = null;
    let promptTail: string | null = null;
    let promptPrefixChars = 0;
    const paper = papers.get(task.paper);
    const snippet = paper?.snippets.find((s) => s.file === task.file && s.name === task.snippet);
    if (!sources.pset) notes.push(`no diff or prompt: ${sources.psetNote ?? 'the pset is not at hand'}`);
    else if (!paper || !snippet || !matching.has(task.taskId)) {
      notes.push(`no diff or prompt: the pset at ${sources.pset.root} is not the content this task was run on`);
    } else {
      if (answer !== null) diff = spliceDiff(paper, snippet, answer);
      if (templateFits) {
        const prompt = buildPrompt(sources.template!, paper, snippet, run.spec.withPaper);
        promptTail = prompt.text.slice(prompt.sharedPrefixChars);
        promptPrefixChars = prompt.sharedPrefixChars;
      } else {
        notes.push(
          `no prompt: the run's prompt template (sha256 ${run.spec.promptTemplateDigest.slice(0, 12)}) is not at hand; pass it with --prompt-template FILE`,
        );
      }
    }
    const envBroken = broken.has(task.paper) ? (broken.get(task.paper) ?? 'its oracle fails here') : null;
    return { task, completion, answer, verdict, passed: passed(verdict ?? undefined, judge), envBroken, diff, promptTail, promptPrefixChars, notes };
  });
}

/** The shared prompt prefix (instructions + paper) of each paper, once: every task of the paper starts with it. */
export function promptPrefixes(run: RunRecord, sources: TaskSources): Map<string, string> {
  const out = new Map<string, string>();
  if (!sources.pset || !sources.template || sources.template.digest !== run.spec.promptTemplateDigest) return out;
  for (const paper of sources.pset.papers) {
    const snippet = paper.snippets[0];
    if (!snippet) continue;
    const prompt = buildPrompt(sources.template, paper, snippet, run.spec.withPaper);
    out.set(paper.meta.id, prompt.text.slice(0, prompt.sharedPrefixChars));
  }
  return out;
}

/** A verdict in one line: both judges, the class, the flags, the exit. */
export function describeVerdict(v: Verdict | null, judge: Judge): string {
  if (!v) return 'no verdict yet (untested)';
  const ok = (b: boolean) => (b ? 'pass' : 'fail');
  const exit = v.signal ? `signal ${v.signal}` : v.exitCode === null ? 'not run' : `exit ${v.exitCode}`;
  return [
    `${judge} judge: ${ok(passed(v, judge))}`,
    `strict ${ok(v.strictPass)}, official ${ok(v.officialPass)}`,
    v.failureClass ? `class ${v.failureClass}` : null,
    v.flags.length ? `flags ${v.flags.join(', ')}` : null,
    caughtCheat(v) ? `cheat caught: ${caughtCheat(v)}` : null,
    `${exit} after ${(v.durationMs / 1000).toFixed(2)}s (${v.executor} executor, sandbox ${v.sandbox})`,
  ]
    .filter(Boolean)
    .join('; ');
}

/** What a selection of tasks holds under the judge: the counts `rcb show` and the HTML page print. */
export function countDetails(details: TaskDetail[]): { shown: number; passed: number; failed: number; untested: number; envBroken: number } {
  const envBroken = details.filter((d) => d.envBroken).length;
  const untested = details.filter((d) => !d.envBroken && !d.verdict).length;
  const passedCount = details.filter((d) => !d.envBroken && d.passed).length;
  return { shown: details.length, passed: passedCount, failed: details.length - envBroken - untested - passedCount, untested, envBroken };
}

/** A task's state in one word: pass, fail, untested, or env_broken (its paper cannot run here). */
export function detailStatus(d: TaskDetail): 'pass' | 'fail' | 'untested' | 'env_broken' {
  return d.envBroken ? 'env_broken' : !d.verdict ? 'untested' : d.passed ? 'pass' : 'fail';
}

/** `rcb show`'s text for one task. */
export function formatTaskDetail(d: TaskDetail, judge: Judge): string {
  const t = d.task;
  const out = [`=== ${t.paper} / ${t.file} / ${t.snippet}  model ${t.model}  sample ${t.sample}  (${t.loc} LoC, task ${t.taskId})`];
  out.push(
    d.envBroken
      ? `verdict: env_broken: ${d.task.paper} cannot run here (${d.envBroken}); not run, out of the scores`
      : `verdict: ${describeVerdict(d.verdict, judge)}`,
  );
  const c = d.completion;
  // A verdict without an answer comes from imported results, which keep none.
  if (!c)
    out.push(
      d.verdict
        ? 'answer: not recorded (imported results keep no answers)'
        : d.envBroken
          ? 'answer: none (not generated: its paper cannot run here)'
          : 'answer: none yet (not generated)',
    );
  else if (c.error) out.push(`answer: the model call failed: ${c.error.kind}${c.error.status ? ` ${c.error.status}` : ''}: ${c.error.message}`);
  else {
    out.push(`answer (${c.usage.inputTokens} input, ${c.usage.outputTokens} output tokens, $${c.costUsd.toFixed(4)}, finish ${c.finishReason}):`);
    out.push(d.answer === '' ? '  (no ```python block: the completion is empty)' : d.answer!.replace(/\n$/, ''));
  }
  if (d.diff) out.push('--- diff of the spliced file:', d.diff.replace(/\n$/, ''));
  for (const n of d.notes) out.push(`(${n})`);
  const v = d.verdict;
  if (v && v.executor !== 'none') {
    const log = (name: string, l: Verdict['stdout']) =>
      `--- ${name} (${l.totalBytes} bytes${l.truncated ? ', middle cut' : ''}):\n${l.text.replace(/\n$/, '') || '(empty)'}`;
    out.push(log('stdout', v.stdout), log('stderr', v.stderr));
  }
  return `${out.join('\n')}\n`;
}
