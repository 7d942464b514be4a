import { scoreRun, type Subset } from '../../core/scoring';
import { formatCsv, formatJson, formatMarkdown, formatTable } from '../../core/report/format';
import type { PaperMeta } from '../../core/types';
import type { RunRecord, TaskRecord, Verdict } from '../../core/records';

const paper = (id: string, first: string): PaperMeta => ({ id, first_commit_date: first, annotated_file_paths: [], context_file_paths: [], extra: {} });
const PAPERS = [paper('p1', '2025-03-10'), paper('p2', '2025-04-20')];

/** Model "old" (cutoff 2024-06) passes 3 of 4 one-line tasks per sample; "new" (cutoff 2026-01) is newer than every paper. */
function input(subset: Subset, samples = 1) {
  const tasks: TaskRecord[] = [];
  const verdicts = new Map<string, Verdict>();
  for (const model of ['old', 'new']) {
    for (let i = 0; i < 4; i++) {
      for (let s = 0; s < samples; s++) {
        const taskId = `${model}-${i}-${s}`;
        tasks.push({ taskId, paper: i < 2 ? 'p1' : 'p2', file: 'f.py', snippet: `s${i}`, loc: 1, model, sample: s });
        const ok = i < 3 && !(s === 1 && i === 0);
        verdicts.set(taskId, { taskId, officialPass: ok, strictPass: ok, failureClass: ok ? null : 'functional', flags: [] } as unknown as Verdict);
      }
    }
  }
  return { tasks, verdicts, papers: PAPERS, judge: 'strict' as const, subset, cutoffs: { old: '2024-06', new: '2026-01' } };
}

const run = { runId: 'r', status: 'succeeded', source: 'rcb', spec: { budgetUsd: null }, spentUsd: 0, papers: PAPERS } as unknown as RunRecord;

describe('report formats: intervals and empty subsets', () => {
  it('the table shows each score with its interval, no ± for one sample, and the method under it', () => {
    const text = formatTable(scoreRun(input('all')), run);
    // "old" passes 3 of 4 equal tasks: pass@1 75 with the hand-computed interval [25, 100]
    // (test/core/bootstrap.test.ts). Scaled resamples the papers, p1 at 100 and p2 at 50 with
    // 2 LoC each: p1p1 (1/4) 100, p1p2 (1/2) 75, p2p2 (1/4) 50, so [50, 100].
    expect(text).toMatch(/^old\s+75\.00\s+\[50\.00, 100\.00\]\s+75\.00\s+\[25\.00, 100\.00\]\s+4\s+1\s+functional 1$/m);
    expect(text).not.toContain('±');
    expect(text).toContain('[low, high]: 95% percentile bootstrap over tasks, each keeping its statistic from all its samples');
    expect(text).toContain('scaled (LoC-weighted) scores resample papers (clustered by paper');
    expect(text).toMatch(/per paper:\n.*\n.*\np1\s+new\s+100\.00\s+\[100\.00, 100\.00\]\s+2\s+2\n\s+old\s+100\.00/);
  });

  it('a model with no contamination-safe paper shows n/a and why, not 0.00 ± 0.00 over 0 tasks', () => {
    const report = scoreRun(input('safe-per-model'));
    const text = formatTable(report, run);
    expect(text).toMatch(/^new\s+n\/a\s+n\/a\s+n\/a\s+n\/a\s+0\s+0\s+-$/m);
    expect(text).toContain('new: n/a, no paper was first committed after its cutoff 2026-01; the newest paper of the run was first committed on 2025-04-20');
    expect(text).not.toMatch(/^new\s+0\.00/m);
    const md = formatMarkdown(report, run);
    expect(md).toContain('| new | n/a | n/a | n/a | n/a | 0 | 0 | - |');
    const csv = formatCsv(report).split('\n');
    expect(csv[0].split(',').slice(11, 16)).toEqual(['scaled_pass1_ci_low', 'scaled_pass1_ci_high', 'pass1_ci_low', 'pass1_ci_high', 'interval_method']);
    const newAll = csv.find((l) => l.startsWith('strict,safe-per-model,new,ALL,'))!;
    expect(newAll.split(',').slice(4, 8)).toEqual(['', '', '', '']);
    const json = JSON.parse(formatJson(report, run));
    expect(json.notes).toHaveLength(1);
    expect(json.models.find((m: { model: string }) => m.model === 'new').scaled.ci).toBeNull();
  });

  it('with several samples: ± the spread over samples, and pass@k by the unbiased estimator with intervals', () => {
    const report = scoreRun(input('all', 2));
    const old = report.models.find((m) => m.model === 'old')!;
    // Sample 0 passes 3 of 4, sample 1 passes 2 of 4: mean 62.5, population std 12.5.
    expect([old.scaled.mean, old.scaled.std]).toEqual([62.5, 12.5]);
    // pass@2: tasks 1 and 2 always pass, task 0 passes once (1 - C(1,2)/C(2,2) = 1), task 3 never.
    expect(old.passAtK[1]).toMatchObject({ k: 2, tasks: 75, loc: 75 });
    const text = formatTable(report, run);
    expect(text).toMatch(/^old\s+62\.50 ± 12\.50\s+\[\d+\.\d\d, \d+\.\d\d\]/m);
    expect(text).toMatch(/^old: pass@1: 62\.50% \[[\d.]+, [\d.]+\] \(LoC-weighted 62\.50% \[[\d.]+, [\d.]+\]\); pass@2: 75\.00% \[/m);
    expect(text).toContain('± is the population standard deviation over samples');
    const csvRow = formatCsv(report)
      .split('\n')
      .find((l) => l.startsWith('strict,all,old,ALL,'))!
      .split(',');
    expect(Number(csvRow[11])).toBeLessThanOrEqual(62.5);
    expect(Number(csvRow[12])).toBeGreaterThanOrEqual(62.5);
  });
});
