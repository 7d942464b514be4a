import {
  bootstrapInterval,
  pairedDifferenceInterval,
  quantile,
  seededRandom,
  weightedScore,
  type BootstrapTask,
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
    const tasks = [...Array.from({ length: 19 }, () => task(1, true)), task(1, false)];
    expect(bootstrapInterval(tasks, 'fixture-20')).toEqual({ low: 85, high: 100 });
  });

  it('LoC-weighted: a 1-line pass and a 3-line failure give 25 with the interval [0, 100]', () => {
    // Resampled pairs: both failed (p 1/4) -> 0, one each (1/2) -> 25, both passed (1/4) -> 100.
    const tasks = [task(1, true), task(3, false)];
    expect(weightedScore(tasks)).toBe(25);
    expect(bootstrapInterval(tasks, 'loc')).toEqual({ low: 0, high: 100 });
  });

  it('with several samples it resamples them within the task: one task passing 1 of 2 samples spans [0, 100]', () => {
    // Without resampling the samples the interval would be the single value 50.
    expect(bootstrapInterval([task(1, true, false)], 'samples')).toEqual({ low: 0, high: 100 });
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

  it('pass@k uses the unbiased estimator per resampled task', () => {
    // One task, 2 samples, one passing: pass@2 = 1 - C(1,2)/C(2,2) = 1; resampled (both fail,
    // p 1/4) -> 0, otherwise 1: the interval is [0, 100].
    const stat = (n: number, c: number) => passAtK(n, c, 2);
    expect(weightedScore([task(1, true, false)], stat)).toBe(100);
    expect(bootstrapInterval([task(1, true, false)], 'k', stat)).toEqual({ low: 0, high: 100 });
  });

  it('quantile is the inverted empirical CDF', () => {
    const sorted = [0, 10, 20, 30];
    expect([quantile(sorted, 0.25), quantile(sorted, 0.26), quantile(sorted, 0.975), quantile(sorted, 0)]).toEqual([0, 10, 30, 0]);
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
  const rec = (i: number, passed: boolean): [TaskRecord, Verdict] => [
    { taskId: `t${i}`, paper: 'p', file: 'f.py', snippet: `s${i}`, loc: 1, model: 'm', sample: 0 },
    { taskId: `t${i}`, officialPass: passed, strictPass: passed, failureClass: passed ? null : 'functional' } as Verdict,
  ];

  it('attaches the hand-computed interval to scaled pass@1, pass@1 and the paper, and states the method', () => {
    const rows = [rec(0, true), rec(1, true), rec(2, true), rec(3, false)];
    const report = scoreRun({
      tasks: rows.map(([t]) => t),
      verdicts: new Map(rows.map(([, v]) => [v.taskId, v])),
      papers: [{ id: 'p', annotated_file_paths: [], context_file_paths: [], extra: {} }],
      judge: 'official',
      subset: 'all',
      cutoffs: {},
    });
    const m = report.models[0];
    expect(m.scaled.mean).toBe(75);
    // The seed differs per scope, but with this distribution every seed tried gives [25, 100].
    expect(m.scaled.ci).toEqual({ low: 25, high: 100 });
    expect(m.pass1.ci).toEqual({ low: 25, high: 100 });
    expect(m.papers[0].scaled.ci).toEqual({ low: 25, high: 100 });
    expect(report.interval).toMatch(/95% percentile bootstrap, 2000 resamples of the tasks/);
  });
});
