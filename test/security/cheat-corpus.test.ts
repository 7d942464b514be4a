/**
 * The cheat corpus (test/fixtures/cheats/<paper>/<name>.py): answers that implement nothing
 * and make the paper's test pass anyway, by patching its checks, reaching the reference, or
 * forging the driver's report. Each runs through every local executor and sandbox and must
 * fail the strict judge; the oracle and the correct answers written differently beside them
 * (`correct-*.py`) must pass it. See docs/security.md, "Verdicts an answer cannot forge".
 *
 * A file starts with `# cheat: <class>` (or `# correct`) and `# snippet: <name>`; the rest
 * is the snippet's body, spliced in at its indentation. Add a cheat by adding a file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { findSnippet } from '../../core/prompt/mask';
import { candidateFor } from '../../core/run/evaluate';
import { cheatClass, judge } from '../../core/judge';
import type { Candidate, RawExecution } from '../../core/executor';
import type { Paper } from '../../core/types';
import { createLocalExecutor } from '../../adapters/executor';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { PSET_MINI } from '../helpers/cli';
import { describeWithRealPset, REAL_PSET } from '../helpers/shared-data';

const CORPUS = join(__dirname, '..', 'fixtures', 'cheats');
/** The bundled example's paper; the others come from the real pset. */
const MINI_PAPERS = new Set(['smoothfocal']);

interface Entry {
  taskId: string;
  paper: string;
  snippet: string;
  /** The class the cheat is filed under, or null for an answer that must pass. */
  cheat: string | null;
  code: string;
}

function readEntry(paper: string, file: string): Entry {
  const lines = readFileSync(join(CORPUS, paper, file), 'utf8').split('\n');
  const head = lines[0].match(/^# (?:cheat: (\S+)|correct)$/);
  const snippet = lines[1].match(/^# snippet: (.+)$/);
  if (!head || !snippet) throw new Error(`${join(CORPUS, paper, file)}:1: expected '# cheat: <class>' or '# correct', then '# snippet: <name>'`);
  return { taskId: `${paper}/${file}`, paper, snippet: snippet[1], cheat: head[1] ?? null, code: lines.slice(2).join('\n') };
}

const entries: Entry[] = readdirSync(CORPUS)
  .sort()
  .flatMap((paper) =>
    readdirSync(join(CORPUS, paper))
      .filter((f) => f.endsWith('.py'))
      .sort()
      .map((f) => readEntry(paper, f)),
  );
const cheats = entries.filter((e) => e.cheat !== null);

function papersById(): Map<string, Paper> {
  const real = [...new Set(entries.map((e) => e.paper))].filter((p) => !MINI_PAPERS.has(p));
  const papers = [...loadPset(PSET_MINI, { papers: [...MINI_PAPERS] }).papers, ...loadPset(REAL_PSET, { papers: real }).papers];
  return new Map(papers.map((p) => [p.meta.id, p]));
}

/** Every entry, plus the oracle of each snippet the corpus uses (its own body). */
function candidates(): { list: Candidate[]; completions: Map<string, string>; oracles: string[] } {
  const papers = papersById();
  const list: Candidate[] = [];
  const completions = new Map<string, string>();
  const oracles = new Set<string>();
  for (const e of entries) {
    const paper = papers.get(e.paper)!;
    const snippet = findSnippet(paper, e.snippet);
    list.push(candidateFor(e.taskId, paper, snippet, e.code));
    completions.set(e.taskId, e.code);
    const oracleId = `${e.paper}/oracle:${e.snippet}`;
    if (!oracles.has(oracleId)) {
      oracles.add(oracleId);
      list.push(candidateFor(oracleId, paper, snippet, snippet.body.join('\n')));
      completions.set(oracleId, snippet.body.join('\n'));
    }
  }
  return { list, completions, oracles: [...oracles] };
}

const EXECUTORS = [
  { kind: 'cold', warm: false, sandbox: 'bwrap' },
  { kind: 'warm', warm: true, sandbox: 'bwrap' },
  ...(runningAsRoot()
    ? ([
        { kind: 'cold, uid sandbox,', warm: false, sandbox: 'uid' },
        { kind: 'warm, uid sandbox,', warm: true, sandbox: 'uid' },
      ] as const)
    : []),
] as const;

describeWithRealPset('the cheat corpus', () => {
  it('holds at least 30 cheats over at least 5 real papers, each of a named class', () => {
    const realPapers = new Set(cheats.map((c) => c.paper).filter((p) => !MINI_PAPERS.has(p)));
    expect(cheats.length).toBeGreaterThanOrEqual(30);
    expect(realPapers.size).toBeGreaterThanOrEqual(5);
  });

  describe.each(EXECUTORS)('through the $kind executor', ({ kind, warm, sandbox }) => {
    const results = new Map<string, RawExecution>();
    let completions = new Map<string, string>();
    let oracles: string[] = [];

    beforeAll(async () => {
      const built = candidates();
      completions = built.completions;
      oracles = built.oracles;
      const executor = await createLocalExecutor({
        warm,
        sandbox,
        jobs: 2,
        limits: { timeoutSec: 120, memoryMb: 4096, maxProcesses: 64, maxOutputBytes: 8 * 1024 * 1024, logCapBytes: 16 * 1024 },
      });
      const started = Date.now();
      try {
        for (const r of await executor.run(built.list)) results.set(r.taskId, r);
      } finally {
        await executor.close();
      }
      process.stdout.write(`cheat corpus (${kind} executor): ${built.list.length} runs in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    }, 900_000);

    const verdictOf = (taskId: string) => {
      const raw = results.get(taskId)!;
      expect(raw.infraError).toBeUndefined();
      return judge(raw, { completion: completions.get(taskId)!, testUsesUnittest: true });
    };

    it.each(cheats.map((c) => [c.taskId, c.cheat]))('%s (%s) fails the strict judge', (taskId) => {
      const v = verdictOf(taskId);
      expect([taskId, v.strictPass]).toEqual([taskId, false]);
      expect(cheatClass(v.flags)).not.toBeNull();
    });

    it('passes the oracle and the correct answers written differently', () => {
      const mustPass = [...oracles, ...entries.filter((e) => e.cheat === null).map((e) => e.taskId)];
      const failed = mustPass.map((id) => [id, verdictOf(id)] as const).filter(([, v]) => !v.strictPass);
      expect(failed.map(([id, v]) => `${id}: ${v.flags.join(',') || v.failureClass}`)).toEqual([]);
    });

    it('shows the cheats as passing the official judge (the original rule) for most of the corpus', () => {
      const fooled = cheats.filter((c) => verdictOf(c.taskId).officialPass).length;
      process.stdout.write(`cheats passing the official judge (${kind} executor): ${fooled}/${cheats.length}\n`);
      expect(fooled).toBeGreaterThanOrEqual(30);
    });
  });
});
