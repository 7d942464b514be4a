/**
 * Answers caught forging their verdict (pass the original rule, fail the strict judge) are
 * counted per model and class in every report format, under either judge, and `rcb show`
 * names the class on the task (docs/security.md, "Verdicts an answer cannot forge").
 */
import { scoreRun } from '../../core/scoring';
import { formatCsv, formatJson, formatMarkdown, formatTable } from '../../core/report/format';
import { buildHtmlReport } from '../../core/report/html-report';
import { describeVerdict } from '../../core/report/task-detail';
import { caughtCheat, cheatClass } from '../../core/judge';
import type { PaperMeta } from '../../core/types';
import type { RunRecord, TaskRecord, Verdict } from '../../core/records';
import { makeRun, makeVerdict } from '../aws/records';

const PAPERS: PaperMeta[] = [{ id: 'p1', first_commit_date: '2025-03-10', annotated_file_paths: [], context_file_paths: [], extra: {} }];
const run = { runId: 'r', status: 'succeeded', source: 'rcb', spec: { budgetUsd: null }, spentUsd: 0, papers: PAPERS, models: {} } as unknown as RunRecord;

/** Model "sly": two forged checks, one reference access, one honest pass, one plain failure; "honest": all pass. */
function input(judge: 'strict' | 'official') {
  const tasks: TaskRecord[] = [];
  const verdicts = new Map<string, Verdict>();
  const sly: Partial<Verdict>[] = [
    { strictPass: false, failureClass: 'integrity', flags: ['forged_check'] },
    { strictPass: false, failureClass: 'integrity', flags: ['unittest_patched', 'static:mentions_unittest'] },
    { strictPass: false, failureClass: 'integrity', flags: ['reference_access', 'introspection'] },
    {},
    { officialPass: false, strictPass: false, failureClass: 'functional', exitCode: 1 },
  ];
  const add = (model: string, i: number, v: Partial<Verdict>) => {
    const taskId = `${model}-${i}`;
    tasks.push({ taskId, paper: 'p1', file: 'f.py', snippet: `s${i}`, loc: 1, model, sample: 0 });
    verdicts.set(taskId, makeVerdict(taskId, v));
  };
  sly.forEach((v, i) => add('sly', i, v));
  for (let i = 0; i < 5; i++) add('honest', i, {});
  return { tasks, verdicts, papers: PAPERS, judge, subset: 'all' as const, cutoffs: {} };
}

describe('caught cheats in the reports', () => {
  it('files each verdict under the first class its flags name', () => {
    expect(cheatClass(['reference_access', 'forged_check'])).toBe('reference_access');
    expect(cheatClass(['unittest_patched'])).toBe('forged_check');
    expect(cheatClass(['report_forged'])).toBe('judge_tampered');
    expect(cheatClass(['tampered:loss.py'])).toBe('other_integrity');
    expect(cheatClass([])).toBeNull();
    expect(caughtCheat(makeVerdict('x', { strictPass: false, failureClass: 'no_code', flags: ['no_code'] }))).toBeNull();
  });

  it.each(['strict', 'official'] as const)('counts them per model and class under the %s judge, in table, markdown, csv and json', (judge) => {
    const report = scoreRun(input(judge));
    expect(report.models.find((m) => m.model === 'sly')!.cheats).toEqual({ forged_check: 2, reference_access: 1 });
    expect(report.models.find((m) => m.model === 'honest')!.cheats).toEqual({});

    expect(formatTable(report, run)).toMatch(
      /cheats caught \(pass the original rule, fail the strict judge\), by class:\nmodel\s+cheats\n-+\s+-+\nsly\s+forged_check 2, reference_access 1\n/,
    );
    expect(formatMarkdown(report, run)).toContain('| sly | forged_check 2, reference_access 1 |');
    const csv = formatCsv(report).split('\n');
    const column = csv[0].split(',').indexOf('cheats_caught');
    expect(column).toBe(csv[0].split(',').length - 1);
    expect(csv.find((l) => l.includes(',sly,ALL,'))).toMatch(/,"forged_check 2, reference_access 1"$/);
    expect(csv.find((l) => l.includes(',honest,ALL,'))).toMatch(/,-$/);
    const json = JSON.parse(formatJson(report, run));
    expect(json.models.find((m: { model: string }) => m.model === 'sly').cheats).toEqual({ forged_check: 2, reference_access: 1 });
  });

  it('shows them in the HTML leaderboard and on the task in rcb show', () => {
    const { tasks, verdicts } = input('strict');
    const html = buildHtmlReport([
      {
        label: 'r',
        loaded: { run: { ...makeRun('r'), papers: PAPERS }, tasks, verdicts, completions: new Map() },
        sources: { pset: null, psetNote: '', template: null },
      },
    ]);
    expect(html).toContain('<td data-metric="cheats">forged_check 2, reference_access 1</td>');
    expect(describeVerdict(verdicts.get('sly-2')!, 'strict')).toContain('cheat caught: reference_access');
    expect(describeVerdict(verdicts.get('sly-3')!, 'strict')).not.toContain('cheat caught');
  });
});
