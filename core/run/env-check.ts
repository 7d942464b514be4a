/**
 * The environment check: does each paper's oracle pass here? A paper whose tests cannot
 * run in this environment (a missing module, a broken interpreter) would score 0% for every
 * model and look exactly like wrong answers; its tasks are reported as env_broken instead,
 * kept out of the scores and named in every report (SPEC 8).
 *
 * One test per paper suffices: the oracle's answer for any snippet splices the original body
 * back, so every oracle candidate of a paper is the paper's own unmodified file.
 */
import type { Paper, Pset } from '../types';
import type { RawExecution, TestExecutor } from '../executor';
import type { PaperEnvironment } from '../records';
import { judge } from '../judge';
import { lastException } from '../failure-class';
import { originalBody } from '../prompt/mask';
import { candidateFor, testUsesUnittest } from './evaluate';

/**
 * Papers already checked for this interpreter, by paper digest: doctor's results, shared
 * with `rcb run` (a file here), or the cloud's, per image digest (a table item).
 */
export interface EnvironmentCache {
  get(paperDigest: string, interpreter: string): PaperEnvironment | null | Promise<PaperEnvironment | null>;
  put(paperDigest: string, interpreter: string, result: PaperEnvironment): void | Promise<void>;
}

export interface EnvironmentCheckInput {
  pset: Pset;
  /** The interpreter the tests run with, as the cache knows it (an absolute path). */
  interpreter: string;
  /** Run every paper's oracle even when the cache knows it (`rcb doctor` does). */
  refresh?: boolean;
}

const MISSING_MODULE = /^ModuleNotFoundError: No module named '([^']+)'/m;
const ERROR_LINE = /^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b.*$/m;

/** Why an oracle run failed, in one line: the missing module, else the first error line, else how it ended. */
export function failureReason(raw: RawExecution, flags: string[]): string {
  const text = `${raw.stderr.text}\n${raw.stdout.text}`;
  const missing = MISSING_MODULE.exec(text);
  if (missing) return `missing module ${missing[1]}`;
  if (raw.killedFor === 'timeout') return 'the test timed out';
  if (raw.killedFor === 'output') return 'the test wrote too much output';
  if (raw.killedFor === 'disk') return 'the test wrote more to disk than its cap';
  if (raw.infraError) return `executor error: ${raw.infraError}`;
  const named = lastException(raw.stderr.text) ?? lastException(raw.stdout.text);
  const line = ERROR_LINE.exec(text) ?? (named ? new RegExp(`^${named.replace(/\./g, '\\.')}.*$`, 'm').exec(text) : null);
  if (line) return line[0].trim().slice(0, 300);
  const first = text.split('\n').find((l) => /Error:|Exception:|Traceback|failed/.test(l));
  if (first) return first.trim().slice(0, 300);
  if (raw.exitCode !== 0) return raw.signal ? `killed by ${raw.signal}` : `exit status ${raw.exitCode}`;
  return `the oracle fails the strict judge (${flags.join(', ')})`;
}

/**
 * How many times a paper's oracle is run before the paper is declared env_broken. A broken
 * environment fails every time, and says so the first time (a missing module is not asked
 * again). But a paper's reference can also fail by chance or by load (LEN's test gives each
 * optimiser a 0.1 s wall-clock budget; docs/environment-checks.md): one such failure must not
 * drop the whole paper from the score, which the benchmark's decision on flaky references
 * (reported, kept, flagged) forbids. So any other failure is checked once more.
 */
export const ENV_CHECK_ATTEMPTS = 2;

/** Each paper's result, in pset order; papers the cache knows are not run again unless `refresh`. */
export async function checkEnvironment(deps: { executor: TestExecutor; cache?: EnvironmentCache }, input: EnvironmentCheckInput): Promise<PaperEnvironment[]> {
  const results = new Map<string, PaperEnvironment>();
  let toRun: Paper[] = [];
  for (const paper of input.pset.papers) {
    const known = input.refresh ? null : ((await deps.cache?.get(paper.digest, input.interpreter)) ?? null);
    if (known) results.set(paper.meta.id, { ...known, paper: paper.meta.id });
    else if (paper.snippets.length) toRun.push(paper);
  }
  const checked = new Map<string, { result: PaperEnvironment; executorFailed: boolean }>();
  for (let attempt = 1; attempt <= ENV_CHECK_ATTEMPTS && toRun.length; attempt++) {
    const byTask = new Map(toRun.map((p) => [`env-check:${p.meta.id}`, p]));
    const candidates = toRun.map((p) => candidateFor(`env-check:${p.meta.id}`, p, p.snippets[0], originalBody(p.snippets[0])));
    const raws = await deps.executor.run(candidates);
    const again: Paper[] = [];
    for (const raw of raws) {
      const paper = byTask.get(raw.taskId)!;
      const v = judge(raw, { completion: originalBody(paper.snippets[0]), testUsesUnittest: testUsesUnittest(paper) });
      const runs = !raw.infraError && v.strictPass;
      const reason = runs ? null : failureReason(raw, v.flags);
      checked.set(paper.meta.id, { result: { paper: paper.meta.id, runs, reason }, executorFailed: !!raw.infraError });
      if (!runs && !raw.infraError && !MISSING_MODULE.test(`${raw.stderr.text}\n${raw.stdout.text}`)) again.push(paper);
    }
    toRun = again;
  }
  for (const paper of input.pset.papers) {
    const c = checked.get(paper.meta.id);
    if (!c) continue;
    results.set(paper.meta.id, c.result);
    // An executor failure says nothing about the environment: not remembered.
    if (!c.executorFailed) await deps.cache?.put(paper.digest, input.interpreter, c.result);
  }
  return input.pset.papers.filter((p) => results.has(p.meta.id)).map((p) => results.get(p.meta.id)!);
}
