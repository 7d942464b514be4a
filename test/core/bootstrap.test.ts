import {
  bootstrapInterval,
  exactDistribution,
  EXACT_MAX_UNITS,
  pairedDifferenceInterval,
  pointEstimates,
  quantile,
  seededRandom,
  unitIntervals,
  unitsOf,
  weightedQuantile,
  weightedScore,
  type BootstrapTask,
  type BootstrapUnit,
} from '../../core/report/bootstrap';
import { passAtK, scoreRun } from '../../core/scoring';
import type { TaskRecord, Verdict } from '../../core/records';

const task = (weight: number, ...samples: boolean[]): BootstrapTask => ({ weight, samples });

describe('bootstrapInterval: hand-computed intervals', () => {
  it('3 of 4 equal tasks pass: resampled failures are Binomial(4, 1/4), so the interval is [25, 100]', () => {
    // Prepare: P(rate = 0) = 1/256 = 0.4% < 2.5% <= P(rate <= 25) = 13/256 = 5.1%, so the
    // 2.5% quantile is 25; P(rate <= 75) = 175/256 = 68% < 97.5%, so the 97.5% quantile is 100.
    const tasks = [task(1, true), task(1, true), task(1, true), task(1, false)];
    // Act
    const ci = bootstrapInterval(tasks, 'fixture');
    // Assess
    expect(weightedScore(tasks)).toBe(75);
    expect(ci).toEqual({ low: 25, high: 100 });
  });

  it('19 of 20 tasks pass: the interval is [85, 100] (P(>= 4 of 20 resampled fail) = 1.6%, P(>= 3) = 7.5%)', () => {
    // Failures drawn ~ Binomial(20, 0.05): P(K >= 4) = 0.0159 < 2.5% <= P(K >= 3) = 0.0755,
    // so the 2.5% quantile of the rate is 100 - 3*5 = 85; P(K = 0) = 0.358 > 2.5%, so the top is 100.
    // 20 tasks: 2000 seeded resamples, far enough from the cut points to land on them.
    const tasks = [...Array.from({ length: 19 }, () => task(1, true)), task(1, false)];
    expect(bootstrapInterval(tasks, 'fixture-20')).toEqual({ low: 85, high: 100 });
  });

  it('LoC-weighted: a 1-line pass and a 3-line failure give 25 with the interval [0, 100]', () => {
    // Resampled pairs: both failed (p 1/4) -> 0, one each (1/2) -> 25, both passed (1/4) -> 100.
    const tasks = [task(1, true), task(3, false)];
    expect(weightedScore(tasks)).toBe(25);
    expect(bootstrapInterval(tasks, 'loc')).toEqual({ low: 0, high: 100 });
  });

  it('does not resample the samples within a task: one task passing 1 of 2 samples is [50, 50]', () => {
    expect(bootstrapInterval([task(1, true, false)], 'samples')).toEqual({ low: 50, high: 50 });
  });

  it('every task passing (or none) gives a zero-width interval at the score', () => {
    expect(bootstrapInterval([task(2, true, true), task(5, true, true)], 'all')).toEqual({ low: 100, high: 100 });
    expect(bootstrapInterval([task(2, false), task(5, false)], 'none')).toEqual({ low: 0, high: 0 });
  });

  it('no task in scope gives no interval', () => {
    expect(bootstrapInterval([], 'empty')).toBeNull();
  });

  it('is reproducible: the same seed gives the same interval, the generator is deterministic', () => {
    const tasks = Array.from({ length: 30 }, (_, i) => task(1 + (i % 4), i % 3 === 0, i % 2 === 0));
    expect(bootstrapInterval(tasks, 's')).toEqual(bootstrapInterval(tasks, 's'));
    const r = seededRandom(1);
    const first = [r(), r(), r()];
    const again = seededRandom(1);
    expect([again(), again(), again()]).toEqual(first);
  });

  it("pass@k keeps each task's unbiased estimate from all its samples: pass@2 of 2/3 on every task is 100 [100, 100]", () => {
    // The case: resampling the 3 samples within each task drew all three failing with
    // p (1/3)^3 and gave pass@2 100% [80.65, 95.70]. Every task's pass@2 is 1 - C(1,2)/C(3,2) = 1.
    const stat = (n: number, c: number) => passAtK(n, c, 2);
    const tasks = Array.from({ length: 31 }, (_, i) => task(1 + (i % 5), true, true, false));
    expect(weightedScore(tasks, stat)).toBe(100);
    expect(bootstrapInterval(tasks, 'k', stat)).toEqual({ low: 100, high: 100 });
  });

  it('clustered by paper: two papers, one all passing (3 LoC), one all failing (1 LoC): 75 in [0, 100]', () => {
    // Resampled papers: AA (1/4) -> 100, AB (1/2) -> 75, BB (1/4) -> 0.
    const tasks: BootstrapTask[] = [
      { weight: 1, samples: [true], cluster: 'A' },
      { weight: 2, samples: [true], cluster: 'A' },
      { weight: 1, samples: [false], cluster: 'B' },
    ];
    expect(weightedScore(tasks)).toBe(75);
    expect(bootstrapInterval(tasks, 'c', undefined, { clustered: true })).toEqual({ low: 0, high: 100 });
    // The units are the papers' sums: A 3 of 3 LoC, B 0 of 1.
    expect(unitsOf(tasks, [{ weight: (t) => t.weight, stat: (n, c) => c / n }], true)).toEqual([
      { num: [3], den: [3] },
      { num: [0], den: [1] },
    ]);
  });

  it('clustered with a single paper falls back to its tasks (one paper drawn again is the same paper)', () => {
    const tasks: BootstrapTask[] = [0, 1, 2, 3].map((i) => ({ weight: 1, samples: [i < 3], cluster: 'only' }));
    expect(bootstrapInterval(tasks, 'one', undefined, { clustered: true })).toEqual({ low: 25, high: 100 });
  });

  it('quantile is the inverted empirical CDF, weighted or not', () => {
    const sorted = [0, 10, 20, 30];
    expect([quantile(sorted, 0.25), quantile(sorted, 0.26), quantile(sorted, 0.975), quantile(sorted, 0)]).toEqual([0, 10, 30, 0]);
    const values = Float64Array.from([30, 0, 20, 10]);
    const probs = Float64Array.from([0.25, 0.25, 0.25, 0.25]);
    expect([0.25, 0.26, 0.975, 0].map((q) => weightedQuantile(values, probs, q))).toEqual([0, 10, 30, 0]);
  });
});

/**
 * The reference: every ordered draw of n units out of n (n^n of them, each equally likely),
 * its ratio per metric, sorted, and the inverted-CDF quantiles. No multinomial algebra, no
 * shortcut: what the bootstrap distribution is by definition.
 */
function bruteForceIntervals(units: BootstrapUnit[], metrics: number): { low: number; high: number }[] {
  const n = units.length;
  const values: number[][] = Array.from({ length: metrics }, () => []);
  const index = new Array(n).fill(0);
  for (;;) {
    for (let j = 0; j < metrics; j++) {
      let num = 0;
      let den = 0;
      for (const i of index) {
        num += units[i].num[j];
        den += units[i].den[j];
      }
      values[j].push(den ? (100 * num) / den : 0);
    }
    let d = 0;
    while (d < n && ++index[d] === n) index[d++] = 0;
    if (d === n) break;
  }
  return values.map((v) => {
    v.sort((a, b) => a - b);
    return { low: quantile(v, 0.025), high: quantile(v, 0.975) };
  });
}

/** Random units as a run makes them: a task's weight (its LoC, or 1) and its weighted statistic. */
function randomUnits(random: () => number, n: number, metrics: number): BootstrapUnit[] {
  return Array.from({ length: n }, () => {
    const den = Array.from({ length: metrics }, (_, j) => (j % 2 ? 1 : 1 + Math.floor(random() * 30)));
    const samples = 1 + Math.floor(random() * 4);
    const c = Math.floor(random() * (samples + 1));
    return { den, num: den.map((w, j) => w * passAtK(samples, c, Math.min(samples, 1 + (j % samples)))) };
  });
}

describe('the exact bootstrap distribution against a brute-force enumeration', () => {
  it('gives the same interval end points on 300 seeded small cases (1 to 6 units, 3 metrics each)', () => {
    const random = seededRandom(20);
    let cases = 0;
    for (let trial = 0; trial < 300; trial++) {
      // Prepare
      const n = 1 + (trial % 6);
      const units = randomUnits(random, n, 3);
      // Act
      const exact = unitIntervals(units, 3, `brute ${trial}`);
      const reference = bruteForceIntervals(units, 3);
      // Assess: the same values, up to the order the sums ran in.
      exact.forEach((ci, j) => {
        expect(ci!.low).toBeCloseTo(reference[j].low, 9);
        expect(ci!.high).toBeCloseTo(reference[j].high, 9);
      });
      cases++;
    }
    expect(cases).toBe(300);
  });

  it('has probabilities that sum to 1 and a mean equal to the estimate for a mean of equal weights', () => {
    const random = seededRandom(3);
    for (let n = 1; n <= EXACT_MAX_UNITS; n++) {
      const units = randomUnits(random, n, 2).map((u) => ({ num: [u.num[1]], den: [1] }));
      const { values, probs } = exactDistribution(units, 1);
      const total = probs.reduce((a, p) => a + p, 0);
      const mean = values[0].reduce((a, v, i) => a + v * probs[i], 0);
      expect(total).toBeCloseTo(1, 12);
      expect(mean).toBeCloseTo(pointEstimates(units, 1)[0], 9);
    }
  });

  it('the 2000 seeded resamples of a larger scope land within the exact 1%..5% and 95%..99% quantiles', () => {
    // Just above the exact limit, where the resampling takes over; its exact distribution
    // (C(13, 7) = 1716 multisets) is still at hand to check the resampled end points.
    const random = seededRandom(9);
    for (let trial = 0; trial < 20; trial++) {
      const units = randomUnits(random, EXACT_MAX_UNITS + 1, 1);
      const { values, probs } = exactDistribution(units, 1);
      const [ci] = unitIntervals(units, 1, `mc ${trial}`);
      const q = (p: number) => weightedQuantile(values[0], probs, p);
      expect(ci!.low).toBeGreaterThanOrEqual(q(0.01) - 1e-9);
      expect(ci!.low).toBeLessThanOrEqual(q(0.05) + 1e-9);
      expect(ci!.high).toBeGreaterThanOrEqual(q(0.95) - 1e-9);
      expect(ci!.high).toBeLessThanOrEqual(q(0.99) + 1e-9);
    }
  });
});

describe('pairedDifferenceInterval', () => {
  it('identical runs differ by exactly 0', () => {
    const pairs = [true, false, true].map((p) => ({ weight: 1, a: [p], b: [p] }));
    expect(pairedDifferenceInterval(pairs, 'same')).toEqual({ low: 0, high: 0 });
  });

  it('one task of four flipped to pass: difference 25, interval [0, 75]', () => {
    // Flips drawn ~ Binomial(4, 1/4): P(0 flips) = 31.6% -> low 0; P(<= 2) = 94.9% < 97.5% <= P(<= 3) -> high 75.
    const pairs = [
      { weight: 1, a: [false], b: [true] },
      { weight: 1, a: [true], b: [true] },
      { weight: 1, a: [false], b: [false] },
      { weight: 1, a: [true], b: [true] },
    ];
    expect(pairedDifferenceInterval(pairs, 'flip')).toEqual({ low: 0, high: 75 });
  });
});

describe('scoreRun: intervals in the scores', () => {
  const rec = (i: number, passed: boolean, paper = 'p'): [TaskRecord, Verdict] => [
    { taskId: `t${i}`, paper, file: 'f.py', snippet: `s${i}`, loc: 1, model: 'm', sample: 0 },
    { taskId: `t${i}`, officialPass: passed, strictPass: passed, failureClass: passed ? null : 'functional' } as Verdict,
  ];
  const meta = (id: string) => ({ id, annotated_file_paths: [], context_file_paths: [], extra: {} });

  it('attaches the hand-computed interval to scaled pass@1, pass@1 and the paper, and states the method', () => {
    const rows = [rec(0, true), rec(1, true), rec(2, true), rec(3, false)];
    const report = scoreRun({
      tasks: rows.map(([t]) => t),
      verdicts: new Map(rows.map(([, v]) => [v.taskId, v])),
      papers: [meta('p')],
      judge: 'official',
      subset: 'all',
      cutoffs: {},
    });
    const m = report.models[0];
    expect(m.scaled.mean).toBe(75);
    // One paper: the scaled interval resamples its tasks (exact over 4 tasks).
    expect(m.scaled.ci).toEqual({ low: 25, high: 100 });
    expect(m.pass1.ci).toEqual({ low: 25, high: 100 });
    expect(m.papers[0].scaled.ci).toEqual({ low: 25, high: 100 });
    expect(report.interval).toMatch(/bootstrap over tasks.*resample papers \(clustered by paper/);
  });

  it('clusters the scaled interval by paper and leaves pass@1 resampling tasks', () => {
    // Paper a: 3 tasks passing; paper b: 1 task failing. Scaled 75: papers drawn aa/ab/bb -> [0, 100].
    // pass@1 over 4 tasks: [25, 100] as above.
    const rows = [rec(0, true, 'a'), rec(1, true, 'a'), rec(2, true, 'a'), rec(3, false, 'b')];
    const m = scoreRun({
      tasks: rows.map(([t]) => t),
      verdicts: new Map(rows.map(([, v]) => [v.taskId, v])),
      papers: [meta('a'), meta('b')],
      judge: 'official',
      subset: 'all',
      cutoffs: {},
    }).models[0];
    expect(m.scaled.ci).toEqual({ low: 0, high: 100 });
    expect(m.pass1.ci).toEqual({ low: 25, high: 100 });
    // pass@1 LoC-weighted is the scaled score, from the same resampling: the same interval.
    expect(m.passAtK[0].locCi).toEqual(m.scaled.ci);
  });
});

describe('property: every interval contains its point estimate (seeded random runs)', () => {
  /** A random run of one model: papers, tasks with LoC, samples, pass probabilities from 0 to 1, some untested. */
  function randomRun(random: () => number, judge: 'strict' | 'official') {
    const papers = 1 + Math.floor(random() * 20);
    const samples = 1 + Math.floor(random() * 5);
    const tasks: TaskRecord[] = [];
    const verdicts = new Map<string, Verdict>();
    for (let p = 0; p < papers; p++) {
      const skill = random() < 0.2 ? (random() < 0.5 ? 0 : 1) : random();
      const count = 1 + Math.floor(random() * 10);
      for (let s = 0; s < count; s++) {
        const loc = 1 + Math.floor(random() ** 2 * 60);
        const easy = Math.min(1, Math.max(0, skill + (random() - 0.5) * 0.6));
        for (let i = 0; i < samples; i++) {
          const taskId = `p${p}/s${s}/${i}`;
          tasks.push({ taskId, paper: `p${p}`, file: 'f.py', snippet: `s${s}`, loc, model: 'm', sample: i });
          if (random() < 0.03) continue; // untested
          const ok = random() < easy;
          verdicts.set(taskId, { taskId, officialPass: ok, strictPass: ok, failureClass: ok ? null : 'functional' } as Verdict);
        }
      }
    }
    const meta = Array.from({ length: papers }, (_, p) => ({ id: `p${p}`, annotated_file_paths: [], context_file_paths: [], extra: {} }));
    return scoreRun({ tasks, verdicts, papers: meta, judge, subset: 'all', cutoffs: {} });
  }

  it('holds for scaled pass@1, pass@1, pass@k (tasks and LoC) and every paper over 200 runs', () => {
    const random = seededRandom(2026);
    const counts = { runs: 0, intervals: 0, exact: 0, zeroWidth: 0 };
    const misses: string[] = [];
    const check = (what: string, est: number, ci: { low: number; high: number } | null) => {
      if (!ci) return;
      counts.intervals++;
      if (ci.low === ci.high) counts.zeroWidth++;
      if (!(ci.low <= est && est <= ci.high)) misses.push(`${what}: ${est} [${ci.low}, ${ci.high}]`);
    };
    for (let r = 0; r < 200; r++) {
      const report = randomRun(random, r % 2 ? 'strict' : 'official');
      counts.runs++;
      for (const m of report.models) {
        if (m.paperIds.length <= EXACT_MAX_UNITS) counts.exact++;
        check(`run ${r} scaled`, m.scaled.mean, m.scaled.ci);
        check(`run ${r} pass1`, m.pass1.mean, m.pass1.ci);
        for (const k of m.passAtK) {
          check(`run ${r} pass@${k.k}`, k.tasks, k.tasksCi);
          check(`run ${r} pass@${k.k} LoC`, k.loc, k.locCi);
        }
        for (const p of m.papers) {
          check(`run ${r} ${p.paper} scaled`, p.scaled.mean, p.scaled.ci);
          check(`run ${r} ${p.paper} pass1`, p.pass1.mean, p.pass1.ci);
        }
      }
    }
    // Reported in the closing note: how many intervals this checks.
    console.log(
      `interval property: ${counts.runs} runs, ${counts.intervals} intervals, ${counts.zeroWidth} of zero width, ${counts.exact} model scores with an exact paper distribution, ${misses.length} missing their estimate`,
    );
    expect(misses).toEqual([]);
    expect(counts.intervals).toBeGreaterThan(5_000);
  });

  it('holds for the paired differences of rcb compare over 300 random pairs of runs', () => {
    const random = seededRandom(7);
    const misses: string[] = [];
    for (let r = 0; r < 300; r++) {
      const n = 1 + Math.floor(random() * 40);
      const samples = 1 + Math.floor(random() * 4);
      const draw = (p: number) => Array.from({ length: samples }, () => random() < p);
      const pairs = Array.from({ length: n }, () => {
        const p = random();
        return { weight: 1 + Math.floor(random() * 20), a: draw(p), b: draw(Math.min(1, p + (random() - 0.3) * 0.5)) };
      });
      const est = weightedScore(pairs.map((t) => ({ weight: t.weight, samples: t.b }))) - weightedScore(pairs.map((t) => ({ weight: t.weight, samples: t.a })));
      const ci = pairedDifferenceInterval(pairs, `pair ${r}`)!;
      if (!(ci.low <= est + 1e-9 && est - 1e-9 <= ci.high)) misses.push(`pair ${r}: ${est} [${ci.low}, ${ci.high}]`);
    }
    expect(misses).toEqual([]);
  });
});
