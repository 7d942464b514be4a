/**
 * Flaky references (`rcb doctor --repeat N`): every snippet's oracle (the reference body
 * spliced back) run N times. A snippet whose verdict changes between runs has a test that
 * decides partly by chance (an unseeded random input, a tolerance at the edge of float
 * noise), so a model's pass or fail on it is partly chance too.
 *
 * The decision (docs/environment-checks.md): a flaky snippet is reported and kept in the
 * benchmark; `rcb run` flags its verdicts `flaky_reference` (core/scoring.ts FLAKY_REFERENCE)
 * and reports count and name them. A fix of the pset (a seed, a tolerance) is never made in
 * place: it is a pset overlay (core/pset/overlay.ts), recorded in the run's spec and digest.
 */
import type { Paper, Pset, Snippet } from '../types';
import type { RawExecution, TestExecutor } from '../executor';
import { judge } from '../judge';
import { originalBody } from '../prompt/mask';
import { candidateFor, snippetKey, testUsesUnittest } from './evaluate';
import { failureReason } from './env-check';
import type { Progress } from './progress';

/** One snippet's oracle over the repeats. */
export interface SnippetRepeat {
  paper: string;
  file: string;
  snippet: string;
  runs: number;
  strictPasses: number;
  officialPasses: number;
  /** Distinct reasons of the failing runs (failureReason), at most 3. */
  reasons: string[];
}

export interface PaperRepeat {
  paper: string;
  /** Every snippet of the paper, in pset order. */
  snippets: SnippetRepeat[];
}

/** Its verdict changed from run to run (strict or official). */
export function isFlaky(s: SnippetRepeat): boolean {
  const mixed = (passes: number) => passes > 0 && passes < s.runs;
  return mixed(s.strictPasses) || mixed(s.officialPasses);
}

/** What `rcb run` keeps of doctor's repeats, per paper digest and interpreter: the flaky snippets. */
export interface FlakyRecord {
  paper: string;
  /** How many times each oracle ran. */
  repeat: number;
  flaky: Array<{ file: string; snippet: string }>;
}

export interface FlakyCache {
  get(paperDigest: string, interpreter: string): FlakyRecord | null;
  put(paperDigest: string, interpreter: string, record: FlakyRecord): void;
}

/** The flaky snippets doctor found for the pset's papers with this interpreter (papers it did not repeat have none). */
export function knownFlaky(cache: FlakyCache, pset: Pset, interpreter: string): Set<string> {
  const out = new Set<string>();
  for (const p of pset.papers) for (const s of cache.get(p.digest, interpreter)?.flaky ?? []) out.add(snippetKey(p.meta.id, s.file, s.snippet));
  return out;
}

/**
 * Runs every snippet's oracle `repeat` times (all at once through the executor, so its
 * slots stay busy) and tallies the verdicts. An executor failure is no verdict: that run is
 * not counted (`runs` is then below `repeat`).
 */
export async function repeatReferences(deps: { executor: TestExecutor; progress?: Progress }, input: { pset: Pset; repeat: number }): Promise<PaperRepeat[]> {
  if (!Number.isInteger(input.repeat) || input.repeat < 2) throw new Error(`repeat must be an integer of at least 2, not ${input.repeat}`);
  const entries = new Map<string, { paper: Paper; snippet: Snippet; tally: SnippetRepeat }>();
  const candidates = [];
  const taskIds = new Map<string, string>();
  for (const paper of input.pset.papers) {
    for (const snippet of paper.snippets) {
      const key = snippetKey(paper.meta.id, snippet.file, snippet.name);
      entries.set(key, {
        paper,
        snippet,
        tally: { paper: paper.meta.id, file: snippet.file, snippet: snippet.name, runs: 0, strictPasses: 0, officialPasses: 0, reasons: [] },
      });
      for (let i = 0; i < input.repeat; i++) {
        const taskId = `repeat:${i}:${paper.meta.id}:${snippet.file}:${snippet.name}`;
        taskIds.set(taskId, key);
        candidates.push(candidateFor(taskId, paper, snippet, originalBody(snippet)));
      }
    }
  }
  deps.progress?.start('evaluate', candidates.length);
  const onResult = async (raw: RawExecution) => {
    const entry = entries.get(taskIds.get(raw.taskId)!);
    deps.progress?.advance('evaluate', 1);
    if (!entry || raw.infraError) return;
    const v = judge(raw, { completion: originalBody(entry.snippet), testUsesUnittest: testUsesUnittest(entry.paper) });
    const t = entry.tally;
    t.runs++;
    if (v.strictPass) t.strictPasses++;
    if (v.officialPass) t.officialPasses++;
    if (!v.strictPass) {
      const reason = failureReason(raw, v.flags);
      if (!t.reasons.includes(reason) && t.reasons.length < 3) t.reasons.push(reason);
    }
  };
  await deps.executor.run(candidates, onResult);
  deps.progress?.end('evaluate');
  return input.pset.papers.map((paper) => ({
    paper: paper.meta.id,
    snippets: paper.snippets.map((s) => entries.get(snippetKey(paper.meta.id, s.file, s.name))!.tally),
  }));
}
