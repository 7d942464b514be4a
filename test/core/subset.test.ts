/**
 * The subset method on synthetic data where the truth is known (a 2PL simulation): the fit
 * recovers the order of abilities, the estimate of a new model's full-set score is unbiased,
 * its interval holds about 95% of new models; the subset file round-trips and is refused,
 * naming the file, when malformed or made for another pset.
 */
import { importOverallStats, type OverallStats } from '../../core/report/official';
import { seededRandom } from '../../core/report/bootstrap';
import { checkSubsets, formatCheck, subsetScore } from '../../core/subset/check';
import { estimateScore, fit2pl } from '../../core/subset/irt';
import { assertMatrixOfPset, scaledScore, verdictMatrix, type VerdictMatrix } from '../../core/subset/matrix';
import { estimateWithInterval, fitSubset, locOf, observedOn, selectTasks } from '../../core/subset/method';
import {
  assertSubsetFitsPset,
  buildSubset,
  estimateFromSubset,
  parseSubsetFile,
  serializeSubset,
  SUBSET_SCHEMA,
  type SubsetFile,
} from '../../core/subset/subset-file';

/** A standard normal draw (Box-Muller) from `random`. */
function normal(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

interface World {
  a: number[];
  b: number[];
  loc: number[];
  random: () => number;
}

function world(tasks: number, seed: number): World {
  const random = seededRandom(seed);
  return {
    a: Array.from({ length: tasks }, () => 1 + 2 * random()),
    b: Array.from({ length: tasks }, () => 0.8 + normal(random)),
    loc: Array.from({ length: tasks }, () => 1 + Math.floor(random() * 20)),
    random,
  };
}

/** Verdicts of models of ability `theta` on the world's tasks: Bernoulli draws of the 2PL. */
function simulate(w: World, theta: number[], names = theta.map((_, i) => `m${String(i).padStart(3, '0')}`)): VerdictMatrix {
  const T = w.a.length;
  const y = new Float64Array(theta.length * T);
  theta.forEach((th, i) => {
    for (let j = 0; j < T; j++) y[i * T + j] = w.random() < 1 / (1 + Math.exp(-w.a[j] * (th - w.b[j]))) ? 1 : 0;
  });
  const tasks = w.loc.map((loc, j) => ({ paper: `p${j % 7}`, snippet: `s${String(j).padStart(3, '0')}`, loc }));
  return { models: names, tasks, y, sourceOf: new Map(names.map((n) => [n, 'sim'])) };
}

function spearman(x: ArrayLike<number>, y: ArrayLike<number>): number {
  const rank = (v: ArrayLike<number>) => {
    const order = Array.from({ length: v.length }, (_, i) => i).sort((i, j) => v[i] - v[j]);
    const r = new Array<number>(v.length);
    order.forEach((i, k) => (r[i] = k));
    return r;
  };
  const rx = rank(x);
  const ry = rank(y);
  const n = x.length;
  const d2 = rx.reduce((s, r, i) => s + (r - ry[i]) ** 2, 0);
  return 1 - (6 * d2) / (n * (n * n - 1));
}

describe('the 2PL fit', () => {
  it('recovers the order of the abilities it was fitted on', () => {
    const w = world(150, 1);
    const theta = Array.from({ length: 40 }, () => normal(w.random));
    const m = simulate(w, theta);
    const fit = fit2pl(m.y, m.models.length, m.tasks.length);
    expect(spearman(fit.theta, theta)).toBeGreaterThan(0.95);
    // Difficulties too: harder tasks are passed by fewer models.
    expect(spearman(fit.b, w.b)).toBeGreaterThan(0.8);
  });

  it('ignores cells with no verdict (NaN) rather than reading them as failures', () => {
    const w = world(60, 2);
    const theta = Array.from({ length: 20 }, () => normal(w.random));
    const m = simulate(w, theta);
    const holed = Float64Array.from(m.y);
    // The best model loses half its verdicts: read as failures it would drop in rank.
    const best = theta.indexOf(Math.max(...theta));
    for (let j = 0; j < 60; j += 2) holed[best * 60 + j] = NaN;
    const fit = fit2pl(holed, 20, 60);
    expect(fit.theta.every(Number.isFinite)).toBe(true);
    const full = fit2pl(m.y, 20, 60);
    expect(Math.abs(fit.theta[best] - full.theta[best])).toBeLessThan(0.5);
  });
});

describe('the estimate of a new model from its subset verdicts', () => {
  // 40 fitted models, then 300 new ones from the same population, each estimated from a
  // 30-task subset of 150 and compared with its realised full-set score.
  const w = world(150, 3);
  const train = simulate(
    w,
    Array.from({ length: 40 }, () => normal(w.random)),
  );
  const fitted = fitSubset(
    train,
    train.models.map((_, i) => i),
    30,
    0,
  );
  const fresh = simulate(
    w,
    Array.from({ length: 300 }, () => normal(w.random)),
  );
  const loc = locOf(fresh);
  const results = fresh.models.map((_, i) => {
    const e = estimateWithInterval(fitted.params, loc, observedOn(fresh, i, fitted.tasks), fitted.inflation, {
      priorSd: 1,
      z: 1.96,
      grid: { lo: -6, hi: 6, points: 601 },
    });
    return { ...e, truth: scaledScore(fresh, i) };
  });

  it('is unbiased and closer than the subset score itself', () => {
    const errors = results.map((r) => r.mean - r.truth);
    const bias = errors.reduce((s, e) => s + e, 0) / errors.length;
    const se = Math.sqrt(errors.reduce((s, e) => s + (e - bias) ** 2, 0) / errors.length / errors.length);
    const mae = errors.reduce((s, e) => s + Math.abs(e), 0) / errors.length;
    const naive =
      fresh.models.reduce((s, _, i) => s + Math.abs(subsetScore(loc, observedOn(fresh, i, fitted.tasks), 1.96).estimate - scaledScore(fresh, i)), 0) /
      errors.length;
    // Within three standard errors, plus 0.3 point for the error of a fit on 40 models.
    expect(Math.abs(bias)).toBeLessThan(3 * se + 0.3);
    expect(mae).toBeLessThan(0.8 * naive);
  });

  it('has an interval that holds about 95% of new models', () => {
    const coverage = results.filter((r) => r.low <= r.truth && r.truth <= r.high).length / results.length;
    expect(coverage).toBeGreaterThanOrEqual(0.9);
    expect(coverage).toBeLessThanOrEqual(0.995);
    for (const r of results) expect(r.low <= r.mean && r.mean <= r.high).toBe(true);
  });

  it('is the observed score, with no width, when the subset is every task', () => {
    const all = fresh.tasks.map((_, j) => j);
    const e = estimateScore(
      fitted.params,
      loc,
      all,
      Array.from(all, (j) => fresh.y[j]),
      1,
    );
    expect(e.mean).toBeCloseTo(scaledScore(fresh, 0), 10);
    expect(e.sd).toBe(0);
  });

  it('chooses the tasks of largest LoC² × variance, ties broken by the seed', () => {
    const tasks = [5, 5, 5, 5, 1, 10].map((loc, j) => ({ paper: 'p', snippet: `s${j}`, loc }));
    // Verdicts of 4 models: tasks 0-3 split 2/2 (variance .25), task 4 too, task 5 all pass.
    const rows = [
      [1, 1, 1, 1, 1, 1],
      [1, 1, 1, 1, 0, 1],
      [0, 0, 0, 0, 1, 1],
      [0, 0, 0, 0, 0, 1],
    ];
    const m: VerdictMatrix = { models: ['a', 'b', 'c', 'd'], tasks, y: Float64Array.from(rows.flat()), sourceOf: new Map() };
    const picks = new Set<string>();
    for (let seed = 0; seed < 20; seed++) {
      const chosen = selectTasks(m, [0, 1, 2, 3], 2, seed);
      expect(chosen.every((j) => j <= 3)).toBe(true);
      expect(selectTasks(m, [0, 1, 2, 3], 2, seed)).toEqual(chosen);
      picks.add(chosen.join(','));
    }
    expect(picks.size).toBeGreaterThan(1);
  });
});

/** An overall_stats.json of a verdict matrix (one sample per task). */
function officialOf(m: VerdictMatrix, rows = m.models.map((_, i) => i)): string {
  const results: OverallStats['results'] = {};
  for (const i of rows) {
    m.tasks.forEach((t, j) => {
      const v = m.y[i * m.tasks.length + j];
      if (Number.isNaN(v)) return;
      const paper = (results[t.paper] ??= { paper_metadata: {}, results: {} });
      (paper.results[m.models[i]] ??= { results: {} }).results[t.snippet] = [
        {
          snippet_code_line_count: t.loc,
          completion_idx: 0,
          passed: v === 1,
          exit_code: v === 1 ? 0 : 1,
        },
      ];
    });
  }
  return JSON.stringify({ results });
}

describe('the verdict matrix of imported files', () => {
  const w = world(30, 4);
  const m = simulate(
    w,
    Array.from({ length: 6 }, () => normal(w.random)),
  );

  it('joins several files, one model each, into the same matrix', () => {
    const a = importOverallStats(officialOf(m, [0, 1, 2]), 'a.json');
    const b = importOverallStats(officialOf(m, [3, 4, 5]), 'b.json');
    const joined = verdictMatrix([
      { source: 'a.json', imported: a },
      { source: 'b.json', imported: b },
    ]);
    expect(joined.models).toEqual(m.models);
    expect(joined.tasks.map((t) => `${t.paper}/${t.snippet}/${t.loc}`).sort()).toEqual(m.tasks.map((t) => `${t.paper}/${t.snippet}/${t.loc}`).sort());
    for (let i = 0; i < 6; i++) expect(scaledScore(joined, i)).toBeCloseTo(scaledScore(m, i), 10);
    expect(joined.sourceOf.get(m.models[4])).toBe('b.json');
    const without = verdictMatrix([{ source: 'a.json', imported: a }], [m.models[1]]);
    expect(without.models).toEqual([m.models[0], m.models[2]]);
  });

  it('refuses a model given twice, a task whose LoC differs, an unknown excluded model', () => {
    const a = importOverallStats(officialOf(m, [0, 1]), 'a.json');
    const again = importOverallStats(officialOf(m, [1, 2]), 'b.json');
    expect(() =>
      verdictMatrix([
        { source: 'a.json', imported: a },
        { source: 'b.json', imported: again },
      ]),
    ).toThrow(`b.json: model ${m.models[1]} is also in a.json`);
    const other: VerdictMatrix = { ...m, tasks: m.tasks.map((t, j) => (j === 3 ? { ...t, loc: t.loc + 1 } : t)) };
    const shifted = importOverallStats(officialOf(other, [2]), 'c.json');
    expect(() =>
      verdictMatrix([
        { source: 'a.json', imported: a },
        { source: 'c.json', imported: shifted },
      ]),
    ).toThrow(
      `c.json: ${m.tasks[3].paper} snippet ${m.tasks[3].snippet} has ${m.tasks[3].loc + 1} lines of code for ${m.models[2]}, but ${m.tasks[3].loc} in a.json`,
    );
    expect(() => verdictMatrix([{ source: 'a.json', imported: a }], ['nope'])).toThrow('--exclude-model nope: no such model in a.json');
  });

  it('is checked against the pset: its papers, snippets and lines of code', () => {
    const papers = [...new Set(m.tasks.map((t) => t.paper))].map((id) => ({
      meta: { id },
      snippets: m.tasks.filter((t) => t.paper === id).map((t) => ({ name: t.snippet, loc: t.loc })),
    }));
    expect(() => assertMatrixOfPset(m, { root: '/p', papers }, 'f.json')).not.toThrow();
    expect(() => assertMatrixOfPset(m, { root: '/p', papers: papers.slice(1) }, 'f.json')).toThrow(
      `f.json: paper(s) ${papers[0].meta.id} not in the pset at /p (--pset`,
    );
    const t = m.tasks[0];
    const wrongLoc = papers.map((p) =>
      p.meta.id === t.paper ? { ...p, snippets: p.snippets.map((s) => (s.name === t.snippet ? { ...s, loc: s.loc + 2 } : s)) } : p,
    );
    expect(() => assertMatrixOfPset(m, { root: '/p', papers: wrongLoc }, 'f.json')).toThrow(
      `f.json: ${t.paper} snippet ${t.snippet} has ${t.loc} lines of code, but ${t.loc + 2} in the pset at /p`,
    );
    const extra = papers.map((p) => (p.meta.id === t.paper ? { ...p, snippets: [...p.snippets, { name: 'unjudged', loc: 3 }] } : p));
    expect(() => assertMatrixOfPset(m, { root: '/p', papers: extra }, 'f.json')).toThrow(`f.json: no model has a verdict on ${t.paper} snippet(s) unjudged`);
  });
});

describe('the subset file', () => {
  const w = world(80, 5);
  const m = simulate(
    w,
    Array.from({ length: 12 }, () => normal(w.random)),
  );
  const pset = { digest: 'a'.repeat(64), papers: [...new Set(m.tasks.map((t) => t.paper))] };
  const subset = buildSubset(m, pset, 15, { seed: 3, excludedModels: ['gone'] });
  const text = serializeSubset(subset);

  it('names the pset, the tasks, the method, its parameters and the models fitted on, and round-trips', () => {
    expect(subset.schema).toBe(SUBSET_SCHEMA);
    expect(subset.pset.digest).toBe(pset.digest);
    expect(subset.tasks).toHaveLength(15);
    expect(subset.items).toHaveLength(80);
    expect(subset.models.map((x) => x.id)).toEqual(m.models);
    expect(subset.method.inflation).toBeGreaterThanOrEqual(1);
    expect(subset.excludedModels).toEqual(['gone']);
    expect(parseSubsetFile(text, 's.json')).toEqual(subset);
    // Deterministic: the same inputs write the same bytes.
    expect(serializeSubset(buildSubset(m, pset, 15, { seed: 3, excludedModels: ['gone'] }))).toBe(text);
  });

  it('estimates a model from its verdicts as the method does, and says which chosen tasks had none', () => {
    const row = 4;
    const T = m.tasks.length;
    const verdict = (paper: string, snippet: string) => {
      const j = m.tasks.findIndex((t) => t.paper === paper && t.snippet === snippet);
      return j === 5 || j < 0 ? undefined : m.y[row * T + j];
    };
    const fromFile = estimateFromSubset(parseSubsetFile(text, 's.json'), verdict);
    const chosen = subset.tasks.map((t) => m.tasks.findIndex((x) => x.paper === t.paper && x.snippet === t.snippet));
    const params = { a: Float64Array.from(subset.items, (t) => t.a), b: Float64Array.from(subset.items, (t) => t.b) };
    const direct = estimateWithInterval(
      params,
      locOf(m),
      observedOn(
        m,
        row,
        chosen.filter((j) => j !== 5),
      ),
      subset.method.inflation,
      subset.method,
    );
    expect(fromFile.mean).toBeCloseTo(direct.mean, 10);
    expect(fromFile.low).toBeCloseTo(direct.low, 10);
    expect(fromFile.high).toBeCloseTo(direct.high, 10);
    expect(fromFile.missing).toEqual(chosen.includes(5) ? [m.tasks[5]] : []);
    expect(fromFile.observed).toBe(15 - fromFile.missing.length);
  });

  const broken: [string, (s: SubsetFile & Record<string, unknown>) => unknown, string][] = [
    ['a schema of another version', (s) => ({ ...s, schema: 'rcb-subset/0' }), 's.json: schema "rcb-subset/0" is not rcb-subset/1'],
    ['a digest that is no sha256', (s) => ({ ...s, pset: { ...s.pset, digest: 'abc' } }), 's.json: pset.digest: must be a sha256 in hex'],
    ['a missing method', ({ method: _, ...s }) => s, 's.json: method: Required'],
    ['an unknown field', (s) => ({ ...s, extra: 1 }), "s.json: (top level): Unrecognized key(s) in object: 'extra'"],
    [
      'a negative discrimination',
      (s) => ({ ...s, items: s.items.map((t, i) => (i === 2 ? { ...t, a: -1 } : t)) }),
      's.json: items.2.a: Number must be greater than 0',
    ],
    [
      'a task not among the items',
      (s) => ({ ...s, tasks: [{ paper: 'p0', snippet: 'zz', loc: 3 }, ...s.tasks.slice(1)] }),
      's.json: tasks.0: p0 snippet zz is not among the items',
    ],
    ["a task whose LoC is not its item's", (s) => ({ ...s, tasks: s.tasks.map((t, i) => (i === 1 ? { ...t, loc: t.loc + 1 } : t)) }), 's.json: tasks.1:'],
    ['a size that is not the count of tasks', (s) => ({ ...s, size: 14 }), 's.json: size is 14 but 15 task(s) are listed'],
    ['an item of a paper not in the pset', (s) => ({ ...s, pset: { ...s.pset, papers: s.pset.papers.slice(1) } }), 'is not among pset.papers'],
  ];
  it.each(broken)('is refused, naming the file, with %s', (_, edit, message) => {
    expect(() => parseSubsetFile(JSON.stringify(edit(JSON.parse(text))), 's.json')).toThrow(message);
  });

  it('is refused when not JSON, and for another pset', () => {
    expect(() => parseSubsetFile('{"schema":', 's.json')).toThrow(/^s\.json: not JSON/);
    expect(() => assertSubsetFitsPset(subset, { digest: pset.digest, root: '/p' }, 's.json')).not.toThrow();
    expect(() => assertSubsetFitsPset(subset, { digest: 'b'.repeat(64), root: '/other' }, 's.json')).toThrow(
      /^s\.json: made for the pset with digest aaaaaaaaaaaa… .*but the pset at \/other has digest bbbbbbbbbbbb…/,
    );
  });
});

describe('the leave-one-model-out check', () => {
  it('holds each model out of the fit and beats random subsets on a simulated population', () => {
    const w = world(80, 6);
    const m = simulate(
      w,
      Array.from({ length: 12 }, () => normal(w.random)),
    );
    const [r] = checkSubsets(m, { sizes: [25], randomSeeds: 4 });
    expect(r.method.heldOut).toHaveLength(12);
    expect(r.method.mae).toBeLessThan(r.random.mae);
    expect(r.top.map((t) => t.truth)).toEqual([...r.method.heldOut.map((t) => t.truth)].sort((a, b) => b - a).slice(0, 5));
    // The held-out model reaches no fit: its estimate is the one a fit on the others alone gives.
    const T = m.tasks.length;
    const flipped: VerdictMatrix = { ...m, y: Float64Array.from(m.y, (v, k) => (k < T ? 1 - v : v)) };
    const [f] = checkSubsets(flipped, { sizes: [25], randomSeeds: 1 });
    const others = fitSubset(m, m.models.map((_, i) => i).slice(1), 25, 0);
    const alone = estimateWithInterval(others.params, locOf(m), observedOn(flipped, 0, others.tasks), others.inflation, {
      priorSd: 1,
      z: 1.96,
      grid: { lo: -6, hi: 6, points: 601 },
    });
    expect(f.method.heldOut[0].estimate).toBeCloseTo(alone.mean, 10);
    expect(f.method.heldOut[0].low).toBeCloseTo(alone.low, 10);
    const text = formatCheck([r], { sources: 'sim', models: 12, tasks: T, loc: 0 });
    expect(text).toMatch(/^ {2}25 {2}IRT 2PL, LoC²×variance \(estimate\) +\d+\.\d\d/m);
    expect(text).toMatch(/random subsets \(own score, 4 seeds\)/);
  });
});
