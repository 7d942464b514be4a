/**
 * The verdict matrix a subset is fitted on: models × tasks, each cell the share of a model's
 * samples that passed the task under the official judge (SPEC 8), read from imported results
 * files (overall_stats.json, SPEC 11, through the one reader in core/report/official.ts).
 */
import type { ImportedRun } from '../report/official';

/** A task of the full set, as the official results name it (a snippet of a paper) with its weight. */
export interface SubsetTask {
  paper: string;
  snippet: string;
  /** Lines of code of the snippet (SPEC 4). */
  loc: number;
}

export interface VerdictMatrix {
  /** Model ids, in code-unit order. */
  models: string[];
  /** Every task some model has a verdict on, by paper then snippet (code-unit order). */
  tasks: SubsetTask[];
  /** Row-major models × tasks: the share of the model's samples that passed; NaN where untested. */
  y: Float64Array;
  /** The file each model's verdicts came from. */
  sourceOf: Map<string, string>;
}

export function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function taskKey(paper: string, snippet: string): string {
  return `${paper}\0${snippet}`;
}

/** One imported results file and the name errors give it (its path). */
export interface MatrixInput {
  source: string;
  imported: ImportedRun;
}

/**
 * The matrix of one or more imported files. A model may come from one file only, and two
 * files must agree on a task's lines of code: both would make the full-set score ambiguous.
 * `exclude` names models to leave out; each must be in some file.
 */
export function verdictMatrix(inputs: MatrixInput[], exclude: string[] = []): VerdictMatrix {
  const sourceOf = new Map<string, string>();
  const locOf = new Map<string, { loc: number; source: string; task: SubsetTask }>();
  /** model -> task key -> [passed samples, samples] */
  const counts = new Map<string, Map<string, [number, number]>>();
  for (const { source, imported } of inputs) {
    const verdicts = new Map(imported.verdicts.map((v) => [v.taskId, v]));
    for (const model of Object.keys(imported.run.models)) {
      const earlier = sourceOf.get(model);
      if (earlier !== undefined) throw new Error(`${source}: model ${model} is also in ${earlier}; give each model's verdicts once`);
      sourceOf.set(model, source);
    }
    for (const t of imported.tasks) {
      const key = taskKey(t.paper, t.snippet);
      const known = locOf.get(key);
      if (!known) locOf.set(key, { loc: t.loc, source, task: { paper: t.paper, snippet: t.snippet, loc: t.loc } });
      else if (known.loc !== t.loc) {
        throw new Error(`${source}: ${t.paper} snippet ${t.snippet} has ${t.loc} lines of code for ${t.model}, but ${known.loc} in ${known.source}`);
      }
      const byTask = counts.get(t.model) ?? new Map<string, [number, number]>();
      counts.set(t.model, byTask);
      const c = byTask.get(key) ?? [0, 0];
      byTask.set(key, c);
      const v = verdicts.get(t.taskId);
      if (v) {
        c[0] += v.officialPass ? 1 : 0;
        c[1] += 1;
      }
    }
  }
  for (const m of exclude) {
    if (!sourceOf.has(m)) throw new Error(`--exclude-model ${m}: no such model in ${inputs.map((i) => i.source).join(', ')}`);
  }
  const excluded = new Set(exclude);
  const models = [...sourceOf.keys()].filter((m) => !excluded.has(m)).sort(byCodeUnit);
  const tasks = [...locOf.values()].map((x) => x.task).sort((a, b) => byCodeUnit(a.paper, b.paper) || byCodeUnit(a.snippet, b.snippet));
  const y = new Float64Array(models.length * tasks.length).fill(NaN);
  models.forEach((m, i) => {
    const byTask = counts.get(m);
    tasks.forEach((t, j) => {
      const c = byTask?.get(taskKey(t.paper, t.snippet));
      if (c && c[1] > 0) y[i * tasks.length + j] = c[0] / c[1];
    });
  });
  for (const m of excluded) sourceOf.delete(m);
  return { models, tasks, y, sourceOf };
}

/** A model's scaled pass@1 over the tasks it has verdicts on, in percent (SPEC 8, official judge). */
export function scaledScore(m: VerdictMatrix, row: number): number {
  const T = m.tasks.length;
  let passed = 0;
  let total = 0;
  for (let j = 0; j < T; j++) {
    const v = m.y[row * T + j];
    if (Number.isNaN(v)) continue;
    passed += v * m.tasks[j].loc;
    total += m.tasks[j].loc;
  }
  return total ? (100 * passed) / total : 0;
}

/** The matrix restricted to some of its models (rows), tasks unchanged. */
export function selectRows(m: VerdictMatrix, rows: number[]): VerdictMatrix {
  const T = m.tasks.length;
  const y = new Float64Array(rows.length * T);
  rows.forEach((r, i) => y.set(m.y.subarray(r * T, (r + 1) * T), i * T));
  const models = rows.map((r) => m.models[r]);
  return { models, tasks: m.tasks, y, sourceOf: new Map(models.map((x) => [x, m.sourceOf.get(x) ?? ''])) };
}

/**
 * Check that the verdicts are of this pset's tasks: every paper of the verdicts in the pset,
 * every task a snippet of it with the same lines of code, every snippet of those papers
 * judged for some model (else the full-set score would leave it out). Errors name `sources`.
 */
export function assertMatrixOfPset(
  m: VerdictMatrix,
  pset: { root: string; papers: { meta: { id: string }; snippets: { name: string; loc: number }[] }[] },
  sources: string,
): void {
  const inPset = new Map(pset.papers.map((p) => [p.meta.id, new Map(p.snippets.map((s) => [s.name, s.loc]))]));
  const papers = [...new Set(m.tasks.map((t) => t.paper))];
  const absent = papers.filter((p) => !inPset.has(p));
  if (absent.length)
    throw new Error(`${sources}: paper(s) ${absent.join(', ')} not in the pset at ${pset.root} (--pset names the pset these verdicts were made on)`);
  const judged = new Set(m.tasks.map((t) => taskKey(t.paper, t.snippet)));
  for (const t of m.tasks) {
    const loc = inPset.get(t.paper)!.get(t.snippet);
    if (loc === undefined) throw new Error(`${sources}: ${t.paper} snippet ${t.snippet} is not in the pset at ${pset.root} (--pset)`);
    if (loc !== t.loc)
      throw new Error(`${sources}: ${t.paper} snippet ${t.snippet} has ${t.loc} lines of code, but ${loc} in the pset at ${pset.root} (--pset)`);
  }
  for (const p of papers) {
    const unjudged = [...inPset.get(p)!.keys()].filter((s) => !judged.has(taskKey(p, s)));
    if (unjudged.length) throw new Error(`${sources}: no model has a verdict on ${p} snippet(s) ${unjudged.join(', ')} of the pset at ${pset.root}`);
  }
}
