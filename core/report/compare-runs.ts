/**
 * `rcb compare`: two runs of the same models (another template, another judge's fix, a
 * model update), model by model, on the tasks both hold. The difference is paired: a task
 * is resampled in both runs at once, so what the two runs share (easy and hard tasks)
 * cancels out and the interval is narrower than two separate intervals would suggest.
 */
import type { Judge } from '../types';
import type { LoadedRun } from './loaded-run';
import type { ModelScore, ScoreReport } from '../scoring';
import { scoreStoredRun } from '../scoring';
import type { ConfidenceInterval, PairedTask } from './bootstrap';
import { BOOTSTRAP_RESAMPLES, EXACT_MAX_UNITS, pairedDifferenceInterval, weightedScore } from './bootstrap';

export interface FlippedTask {
  paper: string;
  file: string;
  snippet: string;
  loc: number;
  /** Passing samples out of the task's samples, in each run. */
  a: string;
  b: string;
  /** Failure classes of the failing samples in each run (why it flipped, at a glance). */
  classesA: string[];
  classesB: string[];
}

export interface ModelComparison {
  model: string;
  /** Tasks (paper, file, snippet) both runs hold for the model. */
  tasks: number;
  /** Scaled pass@1 on those tasks, percent. */
  scaledA: number;
  scaledB: number;
  /** scaledB - scaledA, with its paired 95% interval. */
  difference: number;
  ci: ConfidenceInterval | null;
  pass1A: number;
  pass1B: number;
  pass1Difference: number;
  pass1Ci: ConfidenceInterval | null;
  /** Each run's own score of the model, as its report prints it (all its tasks, not only the shared ones). */
  reportA: { scaled: number; pass1: number; tasks: number };
  reportB: { scaled: number; pass1: number; tasks: number };
  /** Tasks passing more often in B (gained) or less often (lost). */
  gained: FlippedTask[];
  lost: FlippedTask[];
}

export interface RunComparison {
  judge: Judge;
  runA: string;
  runB: string;
  method: string;
  models: ModelComparison[];
  /** Models only one run holds: nothing to pair them with. */
  onlyA: string[];
  onlyB: string[];
  /** Papers that cannot run in each run's environment: out of the comparison, as out of the scores. */
  envBrokenA: string[];
  envBrokenB: string[];
}

interface Outcomes {
  loc: number;
  samples: boolean[];
  classes: string[];
}

/** The model's scored tasks, by (paper, file, snippet): the very tasks its report scores. */
function outcomesByTask(m: ModelScore | undefined): Map<string, Outcomes> {
  return new Map((m?.outcomes ?? []).map((o) => [`${o.paper}\0${o.file}\0${o.snippet}`, { loc: o.loc, samples: o.samples, classes: o.classes }]));
}

export function compareRuns(a: LoadedRun, b: LoadedRun, judge: Judge): RunComparison {
  const modelsA = [...new Set(a.tasks.map((t) => t.model))];
  const modelsB = new Set(b.tasks.map((t) => t.model));
  const scoreA: ScoreReport = scoreStoredRun(a.run, a.tasks, a.verdicts, judge, 'all');
  const scoreB: ScoreReport = scoreStoredRun(b.run, b.tasks, b.verdicts, judge, 'all');
  const result: RunComparison = {
    judge,
    runA: a.run.runId,
    runB: b.run.runId,
    method: `paired difference B - A over the tasks both runs hold: 95% percentile bootstrap over those tasks, each drawn in both runs at once and keeping its pass rate from all its samples in each; exact bootstrap distribution for ${EXACT_MAX_UNITS} tasks or fewer, else ${BOOTSTRAP_RESAMPLES} resamples with a fixed seed`,
    models: [],
    onlyA: modelsA.filter((m) => !modelsB.has(m)),
    onlyB: [...modelsB].filter((m) => !modelsA.includes(m)),
    envBrokenA: scoreA.envBroken.map((p) => p.paper),
    envBrokenB: scoreB.envBroken.map((p) => p.paper),
  };
  for (const model of modelsA.filter((m) => modelsB.has(m))) {
    const ma = scoreA.models.find((m) => m.model === model);
    const mb = scoreB.models.find((m) => m.model === model);
    const oa = outcomesByTask(ma);
    const ob = outcomesByTask(mb);
    const pairs: (PairedTask & { key: string; classesA: string[]; classesB: string[] })[] = [];
    for (const [key, x] of oa) {
      const y = ob.get(key);
      if (y) pairs.push({ key, weight: x.loc, a: x.samples, b: y.samples, classesA: x.classes, classesB: y.classes });
    }
    const own = (m: ModelScore | undefined) => ({ scaled: m?.tasks ? m.scaled.mean : 0, pass1: m?.tasks ? m.pass1.mean : 0, tasks: m?.tasks ?? 0 });
    const rate = (s: boolean[]) => s.filter(Boolean).length / s.length;
    const gained: FlippedTask[] = [];
    const lost: FlippedTask[] = [];
    for (const p of pairs) {
      if (rate(p.a) === rate(p.b)) continue;
      const [paper, file, snippet] = p.key.split('\0');
      const count = (s: boolean[]) => `${s.filter(Boolean).length}/${s.length}`;
      (rate(p.b) > rate(p.a) ? gained : lost).push({
        paper,
        file,
        snippet,
        loc: p.weight,
        a: count(p.a),
        b: count(p.b),
        classesA: p.classesA,
        classesB: p.classesB,
      });
    }
    const byTask = pairs.map((p) => ({ a: p.a, b: p.b, weight: 1 }));
    const side = (list: PairedTask[], which: 'a' | 'b') => weightedScore(list.map((p) => ({ weight: p.weight, samples: p[which] })));
    const scaledA = side(pairs, 'a');
    const scaledB = side(pairs, 'b');
    const pass1A = side(byTask, 'a');
    const pass1B = side(byTask, 'b');
    result.models.push({
      model,
      tasks: pairs.length,
      scaledA,
      scaledB,
      difference: scaledB - scaledA,
      ci: pairedDifferenceInterval(pairs, `${model}\0compare scaled`),
      pass1A,
      pass1B,
      pass1Difference: pass1B - pass1A,
      pass1Ci: pairedDifferenceInterval(byTask, `${model}\0compare pass1`),
      reportA: own(ma),
      reportB: own(mb),
      gained,
      lost,
    });
  }
  return result;
}

const pct = (x: number) => x.toFixed(2);
const signed = (x: number) => (x > 0 ? '+' : '') + pct(x);

export function formatComparison(c: RunComparison, labelA: string, labelB: string): string {
  const out = [`A: ${labelA} (run ${c.runA})`, `B: ${labelB} (run ${c.runB})`, ''];
  for (const m of c.models) {
    const ci = (x: ConfidenceInterval | null) => (x ? `[${signed(x.low)}, ${signed(x.high)}]` : 'n/a');
    out.push(
      `${m.model}: ${m.tasks} task(s) in both`,
      `  scaled pass@1 %  A ${pct(m.scaledA)}  B ${pct(m.scaledB)}  B-A ${signed(m.difference)} ${ci(m.ci)}`,
      `  pass@1 %         A ${pct(m.pass1A)}  B ${pct(m.pass1B)}  B-A ${signed(m.pass1Difference)} ${ci(m.pass1Ci)}`,
    );
    out.push(`  own reports: A ${pct(m.reportA.scaled)} over ${m.reportA.tasks} task(s), B ${pct(m.reportB.scaled)} over ${m.reportB.tasks} task(s)`);
    if (!m.gained.length && !m.lost.length) out.push('  no task flipped');
    const list = (title: string, tasks: FlippedTask[]) => {
      if (!tasks.length) return;
      out.push(`  ${title} (${tasks.length}):`);
      const why = (c: string[]) => (c.length ? ` (${c.join(', ')})` : '');
      for (const t of tasks) out.push(`    ${t.paper}/${t.snippet} (${t.file}, ${t.loc} LoC): ${t.a}${why(t.classesA)} -> ${t.b}${why(t.classesB)}`);
    };
    list('passing in B, not in A', m.gained);
    list('passing in A, not in B', m.lost);
    out.push('');
  }
  if (c.onlyA.length) out.push(`only in A: ${c.onlyA.join(', ')}`);
  if (c.onlyB.length) out.push(`only in B: ${c.onlyB.join(', ')}`);
  if (c.envBrokenA.length) out.push(`env_broken in A (cannot run there, not compared): ${c.envBrokenA.join(', ')}`);
  if (c.envBrokenB.length) out.push(`env_broken in B (cannot run there, not compared): ${c.envBrokenB.join(', ')}`);
  if (!c.models.length) out.push('no model is in both runs: nothing to compare');
  out.push(`${c.judge} judge; [low, high]: ${c.method}`);
  return `${out.join('\n')}\n`;
}
