import { isSafe, latestCutoff, passAtK, scoreRun, type ScoreInput } from '../../core/scoring';
import type { TaskRecord, Verdict } from '../../core/records';
import type { FailureClass, PaperMeta } from '../../core/types';

/** One task row: paper, snippet, LoC, and per model the pass of each sample (T/F, '.' = no verdict yet). */
type Row = [paper: string, snippet: string, loc: number, byModel: Record<string, string>];

function build(rows: Row[], failureClass: FailureClass = 'functional'): Pick<ScoreInput, 'tasks' | 'verdicts'> {
  const tasks: TaskRecord[] = [];
  const verdicts = new Map<string, Verdict>();
  for (const [paper, snippet, loc, byModel] of rows) {
    for (const [model, samples] of Object.entries(byModel)) {
      [...samples].forEach((mark, sample) => {
        const taskId = `${model}/${paper}/${snippet}/${sample}`;
        tasks.push({ taskId, paper, file: 'model.py', snippet, loc, model, sample });
        if (mark === '.') return;
        const pass = mark === 'T';
        verdicts.set(taskId, {
          taskId,
          officialPass: pass,
          strictPass: pass,
          flags: [],
          failureClass: pass ? null : failureClass,
          exitCode: pass ? 0 : 1,
          signal: null,
          durationMs: 1,
          stdout: { text: '', totalBytes: 0, truncated: false },
          stderr: { text: '', totalBytes: 0, truncated: false },
          executor: 'cold',
          sandbox: 'none',
          createdAt: '2025-01-01T00:00:00.000Z',
        });
      });
    }
  }
  return { tasks, verdicts };
}

const meta = (id: string, first_commit_date?: string): PaperMeta => ({
  id,
  first_commit_date,
  annotated_file_paths: ['model.py'],
  context_file_paths: [],
  extra: {},
});

/**
 * Hand-computed example: papers p1 (s1: 2 LoC, s2: 3 LoC) and p2 (s3: 5 LoC), 10 LoC, 3 tasks.
 *
 * Model A   sample:  0  1  2          Model B   sample:  0  1  2
 *   s1 (2)           T  T  F            s1 (2)           F  F  F
 *   s2 (3)           F  T  F            s2 (3)           T  T  T
 *   s3 (5)           T  F  F            s3 (5)           F  F  T
 *
 * A scaled: 7/10, 5/10, 0/10 -> 70, 50, 0; mean 40; std sqrt((30²+10²+40²)/3) = sqrt(2600/3)
 * A pass@1: 2/3, 2/3, 0 -> mean 400/9; std (200/9)·sqrt((1+1+4)/3) = (200/9)·sqrt(2)
 * A p1: scaled 2/5, 5/5, 0 -> 40, 100, 0 (mean 140/3); pass@1 50, 100, 0 (mean 50)
 * A p2: scaled 100, 0, 0; mean 100/3; std sqrt(((200/3)²+(100/3)²·2)/3) = sqrt(20000/9) = 100·sqrt(2)/3
 * B scaled: 3/10, 3/10, 8/10 -> 30, 30, 80; mean 140/3; std sqrt(((50/3)²·2+(100/3)²)/3) = (50/3)·sqrt(2)
 * B pass@1: 1/3, 1/3, 2/3 -> mean 400/9; std (100/9)·sqrt(2)
 */
const EXAMPLE: Row[] = [
  ['p1', 's1', 2, { A: 'TTF', B: 'FFF' }],
  ['p1', 's2', 3, { A: 'FTF', B: 'TTT' }],
  ['p2', 's3', 5, { A: 'TFF', B: 'FFT' }],
];

const scoreExample = (over: Partial<ScoreInput> = {}) =>
  scoreRun({ ...build(EXAMPLE), papers: [meta('p1'), meta('p2')], judge: 'official', subset: 'all', cutoffs: {}, ...over });

describe('scoreRun: pass@1 (SPEC 8)', () => {
  it('computes scaled pass@1 per sample, its mean and population std', () => {
    // Act
    const report = scoreExample();

    // Assess
    const a = report.models.find((m) => m.model === 'A')!;
    expect(a.scaled.rates).toEqual([70, 50, 0]);
    expect(a.scaled.mean).toBeCloseTo(40, 10);
    expect(a.scaled.std).toBeCloseTo(Math.sqrt(2600 / 3), 10);
    const b = report.models.find((m) => m.model === 'B')!;
    expect(b.scaled.rates).toEqual([30, 30, 80]);
    expect(b.scaled.mean).toBeCloseTo(140 / 3, 10);
    expect(b.scaled.std).toBeCloseTo((50 / 3) * Math.SQRT2, 10);
  });

  it('computes pass@1 with every task weighted 1', () => {
    // Act
    const report = scoreExample();

    // Assess
    const a = report.models.find((m) => m.model === 'A')!;
    expect(a.pass1.rates.map((r) => r.toFixed(6))).toEqual([200 / 3, 200 / 3, 0].map((r) => r.toFixed(6)));
    expect(a.pass1.mean).toBeCloseTo(400 / 9, 10);
    expect(a.pass1.std).toBeCloseTo((200 / 9) * Math.SQRT2, 10);
    const b = report.models.find((m) => m.model === 'B')!;
    expect(b.pass1.mean).toBeCloseTo(400 / 9, 10);
    expect(b.pass1.std).toBeCloseTo((100 / 9) * Math.SQRT2, 10);
  });

  it('scores each paper on its own tasks', () => {
    // Act
    const a = scoreExample().models.find((m) => m.model === 'A')!;

    // Assess
    const [p1, p2] = a.papers;
    expect([p1.paper, p1.tasks, p1.loc, p2.paper, p2.tasks, p2.loc]).toEqual(['p1', 2, 5, 'p2', 1, 5]);
    expect(p1.scaled.rates).toEqual([40, 100, 0]);
    expect(p1.scaled.mean).toBeCloseTo(140 / 3, 10);
    expect(p1.pass1.rates).toEqual([50, 100, 0]);
    expect(p2.scaled.rates).toEqual([100, 0, 0]);
    expect(p2.scaled.std).toBeCloseTo((100 * Math.SQRT2) / 3, 10);
  });

  it('counts tasks, LoC and samples, and ranks models by scaled pass@1', () => {
    // Act
    const report = scoreExample();

    // Assess
    expect(report.models.map((m) => [m.model, m.tasks, m.loc, m.samples])).toEqual([
      ['B', 3, 10, 3],
      ['A', 3, 10, 3],
    ]);
  });

  it('uses the strict verdict when asked', () => {
    // Prepare: A's s3 sample 0 passes the official judge only.
    const input = { ...build(EXAMPLE), papers: [meta('p1'), meta('p2')], subset: 'all' as const, cutoffs: {} };
    const id = 'A/p2/s3/0';
    input.verdicts.set(id, { ...input.verdicts.get(id)!, strictPass: false, failureClass: 'integrity' });

    // Act
    const official = scoreRun({ ...input, judge: 'official' }).models.find((m) => m.model === 'A')!;
    const strict = scoreRun({ ...input, judge: 'strict' }).models.find((m) => m.model === 'A')!;

    // Assess
    expect(official.scaled.rates).toEqual([70, 50, 0]);
    expect(strict.scaled.rates).toEqual([20, 50, 0]);
    expect(strict.failures.integrity).toBe(1);
  });

  it('counts a task without a verdict as failed and as pending under the strict judge', () => {
    // Prepare
    const rows: Row[] = [
      ['p1', 's1', 2, { A: 'T.' }],
      ['p1', 's2', 3, { A: 'TF' }],
    ];

    // Act
    const a = scoreRun({ ...build(rows), papers: [meta('p1')], judge: 'strict', subset: 'all', cutoffs: {} }).models[0];

    // Assess
    expect(a.scaled.rates).toEqual([100, 0]);
    expect(a.pending).toBe(1);
    expect(a.failures).toEqual({ functional: 1 });
  });
});

describe('passAtK (SPEC 8)', () => {
  const choose = (n: number, k: number): number => {
    if (k < 0 || k > n) return 0;
    let r = 1;
    for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
    return r;
  };

  it('equals 1 - C(n-c, k) / C(n, k) for every n <= 10, c <= n, k <= n', () => {
    for (let n = 1; n <= 10; n++) {
      for (let c = 0; c <= n; c++) {
        for (let k = 1; k <= n; k++) {
          expect(passAtK(n, c, k)).toBeCloseTo(1 - choose(n - c, k) / choose(n, k), 12);
        }
      }
    }
  });

  it('averages pass@k over tasks, and weighted by LoC', () => {
    // Act: A has c = 2, 1, 1 of n = 3 on tasks of 2, 3, 5 LoC.
    const a = scoreExample().models.find((m) => m.model === 'A')!;

    // Assess: k=1: c/n; k=2: 1, 2/3, 2/3; k=3: 1, 1, 1.
    expect(a.passAtK.map((p) => p.k)).toEqual([1, 2, 3]);
    expect(a.passAtK[0].tasks).toBeCloseTo(400 / 9, 10);
    expect(a.passAtK[0].loc).toBeCloseTo(40, 10);
    expect(a.passAtK[1].tasks).toBeCloseTo((100 * 7) / 9, 10);
    expect(a.passAtK[1].loc).toBeCloseTo((100 * (2 + 2 + 10 / 3)) / 10, 10);
    expect(a.passAtK[2]).toMatchObject({ k: 3, tasks: 100, loc: 100 });
  });
});

describe('contamination-safe subsets (SPEC 9)', () => {
  it('makes a paper safe only when its first commit is after the first day of the cutoff month', () => {
    expect(isSafe(meta('x', '2024-03-02'), '2024-03')).toBe(true);
    expect(isSafe(meta('x', '2024-03-01'), '2024-03')).toBe(false);
    expect(isSafe(meta('x', '2024-02-29'), '2024-03')).toBe(false);
    expect(isSafe(meta('x', '2025-01-01'), '2024-12')).toBe(true);
  });

  it('never makes a paper without a first commit date safe', () => {
    expect(isSafe(meta('x'), '2020-01')).toBe(false);
  });

  it('takes the latest known cutoff as the common one', () => {
    expect(latestCutoff(['2023-06', undefined, '2024-03', '2023-12'])).toBe('2024-03');
    expect(latestCutoff([undefined])).toBeNull();
  });

  // p1 is safe for both cutoffs, p2 only for B's earlier one, p3 has no date.
  const SUBSET_ROWS: Row[] = [
    ['p1', 's1', 2, { A: 'TT', B: 'FF' }],
    ['p2', 's2', 3, { A: 'FF', B: 'TT' }],
    ['p3', 's3', 4, { A: 'TT', B: 'TT' }],
  ];
  const subsetInput = (subset: ScoreInput['subset']): ScoreInput => ({
    ...build(SUBSET_ROWS),
    papers: [meta('p1', '2024-05-10'), meta('p2', '2023-09-01'), meta('p3')],
    judge: 'official',
    subset,
    cutoffs: { A: '2024-03', B: '2023-06' },
  });

  it('scores each model on the papers safe for its own cutoff in safe-per-model', () => {
    // Act
    const report = scoreRun(subsetInput('safe-per-model'));

    // Assess
    const byModel = Object.fromEntries(report.models.map((m) => [m.model, m]));
    expect(report.commonCutoff).toBeNull();
    expect([byModel.A.paperIds, byModel.A.cutoff, byModel.A.scaled.mean]).toEqual([['p1'], '2024-03', 100]);
    expect([byModel.B.paperIds, byModel.B.cutoff, byModel.B.scaled.mean]).toEqual([['p1', 'p2'], '2023-06', 60]);
  });

  it('scores every model on the papers safe for the latest cutoff in safe-common', () => {
    // Act
    const report = scoreRun(subsetInput('safe-common'));

    // Assess
    expect(report.commonCutoff).toBe('2024-03');
    expect(report.models.map((m) => [m.model, m.paperIds, m.cutoff, m.scaled.mean])).toEqual([
      ['A', ['p1'], '2024-03', 100],
      ['B', ['p1'], '2024-03', 0],
    ]);
  });

  it('scores every paper, dated or not, in all', () => {
    const report = scoreRun(subsetInput('all'));
    expect(report.models.map((m) => [m.model, m.paperIds, m.cutoff])).toEqual([
      ['B', ['p1', 'p2', 'p3'], null],
      ['A', ['p1', 'p2', 'p3'], null],
    ]);
  });
});
