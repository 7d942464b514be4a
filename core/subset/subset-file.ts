/**
 * The subset file (JSON, schema `rcb-subset/1`): the pset it was made for, the chosen tasks,
 * the method and its fitted parameters, the models it was fitted on. `estimateFromSubset` reads
 * a model's verdicts on the chosen tasks and gives its estimated full-set scaled pass@1.
 */
import { InputError } from '../input-error';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Pset } from '../types';
import { byCodeUnit, scaledScore, taskKey, type SubsetTask, type VerdictMatrix } from './matrix';
import { MAX_FIT_ITERATIONS, MAX_GRID_POINTS, MAX_SUBSET_MAGNITUDE } from '../limits';
import { estimateWithInterval, fitSubset, METHOD_DEFAULTS, METHOD_NAME, type MethodOptions } from './method';

export const SUBSET_SCHEMA = 'rcb-subset/1';

const Task = z.object({ paper: z.string().min(1), snippet: z.string().min(1), loc: z.number().int().positive() }).strict();
/** A finite number of at most MAX_SUBSET_MAGNITUDE either way: 1e308 would overflow the estimate into NaN. */
const bounded = () => z.number().finite().min(-MAX_SUBSET_MAGNITUDE).max(MAX_SUBSET_MAGNITUDE);
const Item = Task.extend({ a: bounded().positive(), b: bounded() }).strict();

export const SubsetFile = z
  .object({
    schema: z.literal(SUBSET_SCHEMA),
    /** The pset the verdicts were made on: the digest rcb computes for these papers (SPEC 1). */
    pset: z.object({ digest: z.string().regex(/^[0-9a-f]{64}$/, 'must be a sha256 in hex'), papers: z.array(z.string().min(1)).min(1) }).strict(),
    method: z
      .object({
        name: z.literal(METHOD_NAME),
        /** Standard deviation of the normal prior on a new model's ability. */
        priorSd: bounded().positive(),
        /** Normal quantile of the interval. */
        z: bounded().positive(),
        /** Factor on the posterior standard deviation, calibrated by leave-one-out over the fitted models. */
        inflation: bounded().min(1),
        grid: z.object({ lo: bounded(), hi: bounded(), points: z.number().int().min(2).max(MAX_GRID_POINTS) }).strict(),
        fit: z
          .object({
            iterations: z.number().int().positive().max(MAX_FIT_ITERATIONS),
            learningRate: bounded().positive(),
            reg: bounded().nonnegative(),
          })
          .strict(),
        seed: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
      })
      .strict(),
    size: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    /** The chosen tasks. */
    tasks: z.array(Task).min(1),
    /** Every task of the full set with its fitted 2PL parameters. */
    items: z.array(Item).min(1),
    /** The models fitted on, with their fitted ability and their full-set scaled pass@1. */
    models: z.array(z.object({ id: z.string().min(1), source: z.string(), ability: z.number(), scaled: z.number() }).strict()).min(2),
    excludedModels: z.array(z.string()),
  })
  .strict();
export type SubsetFile = z.infer<typeof SubsetFile>;

/** Build the subset of `size` tasks from the verdict matrix (all its models) for the pset. */
export function buildSubset(
  m: VerdictMatrix,
  pset: { digest: string; papers: string[] },
  size: number,
  opts: { seed: number; excludedModels: string[]; method?: MethodOptions },
): SubsetFile {
  const method = opts.method ?? METHOD_DEFAULTS;
  const rows = m.models.map((_, i) => i);
  const fitted = fitSubset(m, rows, size, opts.seed, method);
  const round = (x: number) => Number(x.toPrecision(12));
  return {
    schema: SUBSET_SCHEMA,
    pset: { digest: pset.digest, papers: [...pset.papers].sort(byCodeUnit) },
    method: {
      name: METHOD_NAME,
      priorSd: method.priorSd,
      z: method.z,
      inflation: round(fitted.inflation),
      grid: method.grid,
      fit: method.fit,
      seed: opts.seed,
    },
    size,
    tasks: fitted.tasks.map((j) => ({ ...m.tasks[j] })),
    items: m.tasks.map((t, j) => ({ ...t, a: round(fitted.params.a[j]), b: round(fitted.params.b[j]) })),
    models: m.models.map((id, i) => ({ id, source: m.sourceOf.get(id) ?? '', ability: round(fitted.theta[i]), scaled: round(scaledScore(m, i)) })),
    excludedModels: [...opts.excludedModels].sort(byCodeUnit),
  };
}

export function serializeSubset(s: SubsetFile): string {
  return `${JSON.stringify(s, null, 2)}\n`;
}

/** Parse and check a subset file's text; every error names `source`. */
export function parseSubsetFile(text: string, source: string): SubsetFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InputError(`${source}: not JSON (${(e as Error).message})`);
  }
  if (json && typeof json === 'object' && 'schema' in json && (json as { schema: unknown }).schema !== SUBSET_SCHEMA) {
    throw new Error(
      `${source}: schema ${JSON.stringify((json as { schema: unknown }).schema)} is not ${SUBSET_SCHEMA} (made by another version of rcb? rebuild it with \`rcb subset build\`)`,
    );
  }
  const parsed = SubsetFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError(`${source}: ${issue.path.join('.') || '(top level)'}: ${issue.message}`);
  }
  const s = parsed.data;
  const items = new Map<string, number>();
  const papers = new Set(s.pset.papers);
  s.items.forEach((t, i) => {
    const key = taskKey(t.paper, t.snippet);
    if (items.has(key)) throw new InputError(`${source}: items.${i}: ${t.paper} snippet ${t.snippet} is listed twice`);
    if (!papers.has(t.paper)) throw new InputError(`${source}: items.${i}: paper ${t.paper} is not among pset.papers`);
    items.set(key, t.loc);
  });
  const chosen = new Set<string>();
  s.tasks.forEach((t, i) => {
    const key = taskKey(t.paper, t.snippet);
    const loc = items.get(key);
    if (loc === undefined) throw new InputError(`${source}: tasks.${i}: ${t.paper} snippet ${t.snippet} is not among the items`);
    if (loc !== t.loc) throw new InputError(`${source}: tasks.${i}: ${t.paper} snippet ${t.snippet} has ${t.loc} lines of code, its item ${loc}`);
    if (chosen.has(key)) throw new InputError(`${source}: tasks.${i}: ${t.paper} snippet ${t.snippet} is listed twice`);
    chosen.add(key);
  });
  if (s.tasks.length !== s.size) throw new InputError(`${source}: size is ${s.size} but ${s.tasks.length} task(s) are listed`);
  if (!(s.method.grid.hi > s.method.grid.lo)) throw new InputError(`${source}: method.grid: hi must be above lo`);
  return s;
}

/** Refuse a subset made for another pset (or another choice of its papers). */
export function assertSubsetFitsPset(s: SubsetFile, pset: Pick<Pset, 'digest' | 'root'>, source: string): void {
  if (s.pset.digest !== pset.digest) {
    throw new Error(
      `${source}: made for the pset with digest ${s.pset.digest.slice(0, 12)}… (papers ${s.pset.papers.join(', ')}), but the pset at ${pset.root} has digest ${pset.digest.slice(0, 12)}…; build a subset for this pset with \`rcb subset build --pset ${pset.root}\``,
    );
  }
}

/** The estimate a subset gives for one model. Percent of scaled pass@1 (SPEC 8, official judge). */
export interface SubsetEstimate {
  /** The subset's own scaled pass@1: its observed tasks only. */
  subsetScore: number;
  /** Estimated full-set scaled pass@1 and its 95% interval. */
  mean: number;
  low: number;
  high: number;
  /** Chosen tasks with a verdict, and those without (estimated like the tasks outside the subset). */
  observed: number;
  missing: SubsetTask[];
}

/**
 * A model's estimated full-set score from its verdicts on the subset's tasks: `verdict`
 * gives the share of its samples that passed a task (undefined for a task it has no verdict on).
 */
export function estimateFromSubset(s: SubsetFile, verdict: (paper: string, snippet: string) => number | undefined): SubsetEstimate {
  const index = new Map(s.items.map((t, j) => [taskKey(t.paper, t.snippet), j]));
  const params = { a: Float64Array.from(s.items, (t) => t.a), b: Float64Array.from(s.items, (t) => t.b) };
  const loc = Float64Array.from(s.items, (t) => t.loc);
  const observed = { tasks: [] as number[], values: [] as number[] };
  const missing: SubsetTask[] = [];
  for (const t of s.tasks) {
    const v = verdict(t.paper, t.snippet);
    if (v === undefined || Number.isNaN(v)) {
      missing.push(t);
      continue;
    }
    if (v < 0 || v > 1) throw new Error(`${t.paper} snippet ${t.snippet}: a pass share must lie in [0, 1] (got ${v})`);
    observed.tasks.push(index.get(taskKey(t.paper, t.snippet))!);
    observed.values.push(v);
  }
  const e = estimateWithInterval(params, loc, observed, s.method.inflation, { priorSd: s.method.priorSd, z: s.method.z, grid: s.method.grid });
  // Within the bounds, extreme parameters can still underflow every grid point: say so, never "~NaN".
  if (![e.mean, e.low, e.high].every(Number.isFinite)) {
    throw new InputError('the subset file gives no finite estimate (its items or method are out of the range rcb fits; rebuild it with `rcb subset build`)');
  }
  return { subsetScore: e.observed, mean: e.mean, low: e.low, high: e.high, observed: observed.tasks.length, missing };
}

/**
 * sha256 of the subset as `rcb subset build` writes it (the figure it prints): the identity a
 * run on it records (RunSpec.subset). The file is read and written again first, so spacing
 * does not change it.
 */
export function subsetSha256(s: SubsetFile): string {
  return createHash('sha256').update(serializeSubset(s)).digest('hex');
}

/**
 * Refuse a subset that does not fit the pset a run reads: another digest, or a chosen task
 * that is not one of its snippets with the same lines of code. Errors name `source`.
 */
export function assertSubsetTasksInPset(s: SubsetFile, pset: Pick<Pset, 'digest' | 'root' | 'papers'>, source: string): void {
  assertSubsetFitsPset(s, pset, source);
  const inPset = new Map(pset.papers.flatMap((p) => p.snippets.map((sn) => [taskKey(p.meta.id, sn.name), sn.loc] as const)));
  const missing = s.tasks.filter((t) => !inPset.has(taskKey(t.paper, t.snippet)));
  if (missing.length)
    throw new Error(
      `${source}: ${missing.length} of its ${s.tasks.length} task(s) are not snippets of the pset at ${pset.root}: ${missing
        .slice(0, 5)
        .map((t) => `${t.paper} snippet ${t.snippet}`)
        .join(', ')}${missing.length > 5 ? ', …' : ''}`,
    );
  const differ = s.tasks.find((t) => inPset.get(taskKey(t.paper, t.snippet)) !== t.loc);
  if (differ)
    throw new Error(
      `${source}: ${differ.paper} snippet ${differ.snippet} has ${differ.loc} lines of code in the subset, ${inPset.get(taskKey(differ.paper, differ.snippet))} in the pset at ${pset.root}`,
    );
}

/** The pset limited to the subset's tasks: its snippets only, papers without one left out (the digest stays the subset's). */
export function restrictPsetToSubset<P extends Pick<Pset, 'papers'>>(pset: P, s: SubsetFile): P {
  const chosen = new Set(s.tasks.map((t) => taskKey(t.paper, t.snippet)));
  const papers = pset.papers
    .map((p) => ({ ...p, snippets: p.snippets.filter((sn) => chosen.has(taskKey(p.meta.id, sn.name))) }))
    .filter((p) => p.snippets.length > 0);
  return { ...pset, papers };
}

/**
 * Refuse a subset for a run's tasks that it does not fit. A run of rcb records the pset's
 * digest, which must be the subset's; an imported run (`rcb import-official`) records none,
 * so its tasks must hold every task of the subset with the same lines of code, and agree with
 * the subset's items wherever they share a task. Errors name `source`.
 */
export function assertSubsetFitsRun(
  s: SubsetFile,
  run: { runId: string; spec: { psetDigest: string } },
  tasks: Array<{ paper: string; snippet: string; loc: number }>,
  source: string,
): void {
  if (run.spec.psetDigest !== '') {
    if (run.spec.psetDigest !== s.pset.digest)
      throw new Error(
        `${source}: made for the pset with digest ${s.pset.digest.slice(0, 12)}… (papers ${s.pset.papers.join(', ')}), but run ${run.runId} was run on the pset with digest ${run.spec.psetDigest.slice(0, 12)}…`,
      );
    return;
  }
  const locOf = new Map(tasks.map((t) => [taskKey(t.paper, t.snippet), t.loc]));
  const missing = s.tasks.filter((t) => !locOf.has(taskKey(t.paper, t.snippet)));
  if (missing.length)
    throw new Error(
      `${source}: run ${run.runId} has no task for ${missing.length} of the subset's ${s.tasks.length} task(s): ${missing
        .slice(0, 5)
        .map((t) => `${t.paper} snippet ${t.snippet}`)
        .join(', ')}${missing.length > 5 ? ', …' : ''}`,
    );
  const differ = s.items.find((t) => {
    const loc = locOf.get(taskKey(t.paper, t.snippet));
    return loc !== undefined && loc !== t.loc;
  });
  if (differ)
    throw new Error(
      `${source}: ${differ.paper} snippet ${differ.snippet} has ${differ.loc} lines of code in the subset, ${locOf.get(taskKey(differ.paper, differ.snippet))} in run ${run.runId}`,
    );
}
