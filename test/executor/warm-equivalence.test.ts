/**
 * The warm pool judges like the cold executor: the same candidates of the example pset
 * (oracle, empty, wrong and hostile completions) through both, and the verdicts compared
 * member by member: official and strict pass, failure class, flags and the driver report.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Candidate, RawExecution } from '../../core/executor';
import { judge } from '../../core/judge';
import { extractCompletion } from '../../core/prompt/extract';
import { findSnippet, originalBody } from '../../core/prompt/mask';
import { candidateFor } from '../../core/run/evaluate';
import { loadPset } from '../../core/pset/read-pset';
import type { Snippet } from '../../core/types';
import { createColdExecutor, createWarmExecutor } from '../../adapters/executor';
import { PSET_MINI, REPO } from '../helpers/cli';

jest.setTimeout(300_000);

interface Case {
  candidate: Candidate;
  completion: string;
}

const LIMITS = { memoryMb: 2048, maxProcesses: 64, maxOutputBytes: 8 * 1024 * 1024, logCapBytes: 16 * 1024 };
/**
 * The candidates that never end (a busy loop, a fork bomb that swallows its OSError) are
 * stopped at their time limit in both executors whatever the machine's speed, so a short
 * limit keeps them cheap. Every other candidate ends by itself, and must in both: it gets
 * the default 60 s, so that a loaded machine (a second jest worker, a neighbour) cannot turn
 * a slow cold start or a memory bomb's page faults into a timeout on one side only.
 */
const NEVER_ENDS = new Set(['hostile-infinite_loop', 'hostile-fork_bomb']);
const SHORT_LIMITS = { ...LIMITS, timeoutSec: 5 };
const FULL_LIMITS = { ...LIMITS, timeoutSec: 60 };
const neverEnds = (c: Case): boolean => NEVER_ENDS.has(c.candidate.taskId.split('/').at(-1)!);

/** Each case's execution, the never-ending ones under the short limit, in the cases' order. */
async function runAll(
  create: (limits: typeof FULL_LIMITS) => Promise<{ run(c: Candidate[]): Promise<RawExecution[]>; close(): Promise<void> }>,
  cases: Case[],
): Promise<RawExecution[]> {
  const out: RawExecution[] = new Array(cases.length);
  for (const [limits, pick] of [
    [SHORT_LIMITS, neverEnds],
    [FULL_LIMITS, (c: Case) => !neverEnds(c)],
  ] as const) {
    const indices = cases.map((c, i) => [c, i] as const).filter(([c]) => pick(c));
    const executor = await create(limits);
    try {
      const raws = await executor.run(indices.map(([c]) => c.candidate));
      indices.forEach(([, i], k) => {
        out[i] = raws[k];
      });
    } finally {
      await executor.close();
    }
  }
  return out;
}

const at = (snippet: Snippet, lines: string[]): string => `${lines.map((l) => ' '.repeat(snippet.bodyIndent) + l).join('\n')}\n`;

function buildCases(): Case[] {
  const pset = loadPset(PSET_MINI);
  const cases: Case[] = [];
  const add = (paperId: string, snippet: Snippet, kind: string, completion: string): void => {
    const paper = pset.papers.find((p) => p.meta.id === paperId)!;
    cases.push({
      completion,
      candidate: candidateFor(`${paperId}/${snippet.file}/${snippet.name}/${kind}`, paper, snippet, completion),
    });
  };
  for (const paper of pset.papers) {
    for (const snippet of paper.snippets) add(paper.meta.id, snippet, 'oracle', originalBody(snippet));
    const [first, second] = paper.snippets.filter((s) => s.parent === null);
    const leaf = paper.snippets.find((s) => !paper.snippets.some((t) => t.parent === s.name))!;
    add(paper.meta.id, first, 'empty', '');
    add(paper.meta.id, leaf, 'raise', at(leaf, ["raise ValueError('not implemented')"]));
    add(paper.meta.id, leaf, 'syntax', at(leaf, ['x = +* 1']));
    add(paper.meta.id, second ?? first, 'pass', at(second ?? first, ['pass']));
    add(paper.meta.id, leaf, 'os_exit', at(leaf, ['import os', 'os._exit(0)']));
    add(paper.meta.id, leaf, 'traceback_text', at(leaf, ["print('Traceback (most recent call last): just words')"]) + originalBody(leaf));
  }
  // The security suite's hostile completions (all on smoothfocal).
  const smoothfocal = pset.papers.find((p) => p.meta.id === 'smoothfocal')!;
  const hostile = readFileSync(join(REPO, 'test', 'fixtures', 'replays', 'hostile.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { snippet: string; completion: string; case: string });
  for (const h of hostile) {
    // Reading and writing outside the workspace is the security suite's business; here only verdicts count.
    add('smoothfocal', findSnippet(smoothfocal, h.snippet), `hostile-${h.case}`, extractCompletion(h.completion));
  }
  return cases;
}

/** Everything a verdict is made of that must not depend on the executor. */
function verdictShape(raw: RawExecution, completion: string) {
  const v = judge(raw, { completion, testUsesUnittest: true });
  return {
    infraError: raw.infraError ?? null,
    officialPass: v.officialPass,
    strictPass: v.strictPass,
    failureClass: v.failureClass,
    flags: [...v.flags].sort(),
    markersSeen: raw.markersSeen,
    tamperedFiles: raw.tamperedFiles,
    driver: raw.driver && { ...raw.driver, flags: [...raw.driver.flags].sort() },
  };
}

describe('WarmExecutor equivalence with ColdExecutor on examples/pset-mini', () => {
  const cases = buildCases();
  let cold: RawExecution[] = [];
  let warm: RawExecution[] = [];

  beforeAll(async () => {
    cold = await runAll((limits) => createColdExecutor({ jobs: 2, limits, warn: () => undefined }), cases);
    warm = await runAll((limits) => createWarmExecutor({ jobs: 2, limits, warn: () => undefined }), cases);
  });

  it('stops exactly the never-ending candidates at their time limit, in both', () => {
    const timedOut = (raws: RawExecution[]) => cases.filter((_, i) => raws[i].killedFor === 'timeout').map((c) => c.candidate.taskId);
    const expected = cases.filter(neverEnds).map((c) => c.candidate.taskId);
    expect(expected).toHaveLength(NEVER_ENDS.size);
    expect(timedOut(cold)).toEqual(expected);
    expect(timedOut(warm)).toEqual(expected);
  });

  it('runs every candidate in both, warm ones through the warm pool', () => {
    expect(warm).toHaveLength(cases.length);
    expect(warm.every((r) => r.executor === 'warm' && r.sandbox === 'bwrap')).toBe(true);
    expect(cold.every((r) => r.executor === 'cold')).toBe(true);
  });

  it('passes every oracle candidate, strictly, in both', () => {
    const oracle = cases.map((c, i) => [c, i] as const).filter(([c]) => c.candidate.taskId.endsWith('/oracle'));
    expect(oracle.length).toBeGreaterThan(20);
    for (const [c, i] of oracle) {
      expect([c.candidate.taskId, verdictShape(warm[i], c.completion).strictPass]).toEqual([c.candidate.taskId, true]);
      expect([c.candidate.taskId, verdictShape(cold[i], c.completion).strictPass]).toEqual([c.candidate.taskId, true]);
    }
  });

  it.each(buildCases().map((c, i) => [c.candidate.taskId, i] as const))('gives %s the same verdict', (_id, i) => {
    const c = cases[i];
    expect(verdictShape(warm[i], c.completion)).toEqual(verdictShape(cold[i], c.completion));
  });
});
