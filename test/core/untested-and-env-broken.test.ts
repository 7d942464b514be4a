/**
 * Scores of unfinished runs and of runs with papers that cannot run here (SPEC 8): untested
 * tasks under each judge, env_broken tasks out of the scores, and the notes every report prints.
 */
import { scoreRun, type ScoreInput } from '../../core/scoring';
import { formatCsv, formatMarkdown, formatTable } from '../../core/report/format';
import type { TaskRecord, Verdict } from '../../core/records';
import type { PaperMeta } from '../../core/types';

/** Tasks of model A: [paper, snippet, loc, marks], one mark per sample: T pass, F fail, . untested. */
function input(rows: [string, string, number, string][]): Pick<ScoreInput, 'tasks' | 'verdicts' | 'papers' | 'subset' | 'cutoffs'> {
  const tasks: TaskRecord[] = [];
  const verdicts = new Map<string, Verdict>();
  for (const [paper, snippet, loc, marks] of rows) {
    [...marks].forEach((mark, sample) => {
      const taskId = `${paper}/${snippet}/${sample}`;
      tasks.push({ taskId, paper, file: 'model.py', snippet, loc, model: 'A', sample });
      if (mark === '.') return;
      const pass = mark === 'T';
      const log = { text: '', totalBytes: 0, truncated: false };
      verdicts.set(taskId, {
        taskId,
        officialPass: pass,
        strictPass: pass,
        flags: [],
        failureClass: pass ? null : 'functional',
        exitCode: pass ? 0 : 1,
        signal: null,
        durationMs: 1,
        stdout: log,
        stderr: log,
        executor: 'cold',
        sandbox: 'bwrap',
        createdAt: '2026-01-01T00:00:00.000Z',
      });
    });
  }
  const papers = [...new Set(rows.map((r) => r[0]))].map((id): PaperMeta => ({ id, annotated_file_paths: ['model.py'], context_file_paths: [], extra: {} }));
  return { tasks, verdicts, papers, subset: 'all', cutoffs: {} };
}

describe('an unfinished run', () => {
  // s1 (2 LoC) passed both samples; s2 (3 LoC) passed sample 0 and is untested in sample 1; s3 (5 LoC) untested.
  const rows: [string, string, number, string][] = [
    ['p1', 's1', 2, 'TT'],
    ['p1', 's2', 3, 'T.'],
    ['p2', 's3', 5, '..'],
  ];

  it('is scored by the official judge over fully tested tasks only, as the original harness did', () => {
    // Act
    const a = scoreRun({ ...input(rows), judge: 'official' }).models[0];

    // Assess: only s1 is fully tested.
    expect(a.scaled.rates).toEqual([100, 100]);
    expect(a.tasks).toBe(1);
    expect(a.pending).toBe(3);
  });

  it('is scored by the strict judge over every task, an untested sample counting as failed', () => {
    // Act
    const a = scoreRun({ ...input(rows), judge: 'strict' }).models[0];

    // Assess: sample 0: (2 + 3) / 10; sample 1: 2 / 10.
    expect(a.scaled.rates).toEqual([50, 20]);
    expect(a.tasks).toBe(3);
    expect(a.pending).toBe(3);
  });

  it.each([
    ['official', 'this official-judge report leaves their tasks out of the denominator'],
    ['strict', 'this strict-judge report counts them as failures'],
  ] as const)('says in every format how many are untested and how the %s judge treats them', (judge, treated) => {
    // Act
    const report = scoreRun({ ...input(rows), judge });

    // Assess
    expect(report.notes).toEqual([expect.stringContaining(`untested: 3 task sample(s) have no verdict (A 3): ${treated}`)]);
    expect(formatTable(report)).toContain(`note: untested: 3 task sample(s)`);
    expect(formatMarkdown(report)).toContain(`**note:** untested: 3 task sample(s)`);
    // By name: the infra_error columns (and, with a cost, the cost columns) follow these.
    const [header, first] = formatCsv(report).split('\n');
    const names = header.split(',');
    const cells = first.split(',').slice(-names.length);
    expect(['untested', 'env_broken', 'flaky'].map((c) => cells[names.indexOf(c)])).toEqual(['3', '0', '0']);
  });

  it('has no note when every task is tested', () => {
    expect(scoreRun({ ...input([['p1', 's1', 2, 'TF']]), judge: 'strict' }).notes).toEqual([]);
  });
});

describe('papers that cannot run here (env_broken)', () => {
  const rows: [string, string, number, string][] = [
    ['p1', 's1', 2, 'T'],
    ['p1', 's2', 3, 'F'],
    ['DyT', 's3', 5, '.'],
    ['DyT', 's4', 1, '.'],
  ];
  const environment = [
    { paper: 'p1', runs: true, reason: null },
    { paper: 'DyT', runs: false, reason: 'missing module timm' },
  ];

  it.each(['official', 'strict'] as const)('keeps their tasks out of the %s scores and out of the failures', (judge) => {
    // Act
    const report = scoreRun({ ...input(rows), judge, environment });
    const a = report.models[0];

    // Assess
    expect(a.scaled.rates).toEqual([40]);
    expect(a.tasks).toBe(2);
    expect(a.paperIds).toEqual(['p1']);
    expect(a.failures).toEqual({ functional: 1 });
    expect(a.pending).toBe(0);
    expect(a.envBroken).toBe(2);
  });

  it('names them and the reason in a note', () => {
    // Act
    const report = scoreRun({ ...input(rows), judge: 'strict', environment });

    // Assess
    expect(report.notes).toEqual([
      'env_broken: 2 task sample(s) of 1 paper(s) that cannot run in this environment (their oracle fails here) are kept out of the scores, not counted as model failures: DyT (missing module timm)',
    ]);
    expect(formatTable(report)).toContain('note: env_broken: 2 task sample(s)');
  });
});
