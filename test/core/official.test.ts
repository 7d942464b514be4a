import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { importOverallStats, toOverallStats, type OverallStats } from '../../core/report/official';
import { scoreRun } from '../../core/scoring';

// The fixture and the hand arithmetic behind its scores: test/fixtures/core/overall_stats.md.
const FIXTURE = join(__dirname, '..', 'fixtures', 'core', 'overall_stats.json');
const TEXT = readFileSync(FIXTURE, 'utf8');
const ORIGINAL = JSON.parse(TEXT) as OverallStats;
const fixedNow = () => new Date('2025-01-02T03:04:05.000Z');

/** Import the fixture, score it with the official judge on all papers, export it again. */
function roundTrip(text = TEXT): OverallStats {
  const { run, tasks, verdicts } = importOverallStats(text, 'overall_stats.json', fixedNow);
  const byId = new Map(verdicts.map((v) => [v.taskId, v]));
  const report = scoreRun({ tasks, verdicts: byId, papers: run.papers, judge: 'official', subset: 'all', cutoffs: {} });
  return toOverallStats(run, tasks, byId, report);
}

/** Equal to within 0.01 percentage points. */
const near = (actual: number, expected: number) => expect(Math.abs(actual - expected)).toBeLessThan(0.01);

describe('official overall_stats.json round trip (SPEC 11)', () => {
  it('reproduces the hand-computed line and task rates of every model', () => {
    // Act
    const out = roundTrip();

    // Assess
    expect(Object.keys(out.overall_scores!).sort()).toEqual(['GPT_4O_MINI', 'O3_MINI']);
    for (const [model, want] of Object.entries(ORIGINAL.overall_scores!)) {
      const got = out.overall_scores![model];
      for (const kind of ['line_rates', 'task_rates'] as const) {
        near(got[kind]!.mean, want[kind]!.mean);
        near(got[kind]!.std, want[kind]!.std);
        expect(got[kind]!.rates).toHaveLength(want[kind]!.rates.length);
        got[kind]!.rates.forEach((r, i) => near(r, want[kind]!.rates[i]));
      }
    }
  });

  it('matches the hand arithmetic, not only the file', () => {
    // Act: spot values from overall_stats.md, independent of the fixture's numbers.
    const out = roundTrip().overall_scores!;

    // Assess
    near(out.GPT_4O_MINI.line_rates.mean, (100 * 15) / 33);
    near(out.GPT_4O_MINI.line_rates.std, (100 / 11) * Math.sqrt(26 / 3));
    near(out.GPT_4O_MINI.task_rates!.std, (50 / 3) * Math.SQRT2);
    near(out.O3_MINI.line_rates.std, (100 / 11) * Math.sqrt(186 / 27));
    near(out.O3_MINI.task_rates!.mean, 50);
  });

  it('reproduces the per-paper problem_scores', () => {
    // Act
    const out = roundTrip();

    // Assess
    for (const [paper, want] of Object.entries(ORIGINAL.results)) {
      const got = out.results[paper].problem_scores!;
      expect(Object.keys(got).sort()).toEqual(Object.keys(want.problem_scores!).sort());
      for (const [model, score] of Object.entries(want.problem_scores!)) {
        near(got[model].mean, score.mean);
        near(got[model].std, score.std);
      }
    }
  });

  it("lists each snippet's samples with LoC, index, pass and exit code as imported", () => {
    // Act
    const out = roundTrip();

    // Assess
    for (const [paper, want] of Object.entries(ORIGINAL.results)) {
      expect(out.results[paper].results).toEqual(want.results);
    }
    expect(out.results.paperB.results.O3_MINI.results.loss[0]).toEqual({ snippet_code_line_count: 5, completion_idx: 0, passed: false, exit_code: -9 });
  });

  it('gives back the paper metadata and the model configuration as imported', () => {
    // Act
    const out = roundTrip();

    // Assess
    for (const [paper, want] of Object.entries(ORIGINAL.results)) expect(out.results[paper].paper_metadata).toEqual(want.paper_metadata);
    for (const [model, want] of Object.entries(ORIGINAL.overall_scores!)) expect(out.overall_scores![model].llm_cfg).toEqual(want.llm_cfg);
  });

  it('orders samples by completion_idx whatever order the file lists them in', () => {
    // Prepare
    const shuffled = JSON.parse(TEXT) as OverallStats;
    for (const paper of Object.values(shuffled.results)) {
      for (const byModel of Object.values(paper.results)) for (const list of Object.values(byModel.results)) list.reverse();
    }

    // Act
    const out = roundTrip(JSON.stringify(shuffled));

    // Assess
    expect(out.results.paperA.results).toEqual(ORIGINAL.results.paperA.results);
    near(out.overall_scores!.O3_MINI.line_rates.std, ORIGINAL.overall_scores!.O3_MINI.line_rates.std);
  });
});

describe('importOverallStats', () => {
  it('makes one task and one official verdict per sample, with dates read from the metadata', () => {
    // Act
    const { run, tasks, verdicts } = importOverallStats(TEXT, 'overall_stats.json', fixedNow);

    // Assess
    expect(tasks).toHaveLength(2 * 4 * 3);
    expect(new Set(tasks.map((t) => t.taskId)).size).toBe(tasks.length);
    expect(run.source).toBe('import');
    expect(run.spec.samples).toBe(3);
    expect(run.papers.map((p) => [p.id, p.first_commit_date])).toEqual([
      ['paperA', '2024-12-01'],
      ['paperB', '2024-11-05'],
    ]);
    expect(verdicts.filter((v) => v.officialPass)).toHaveLength(13);
    expect(verdicts.every((v) => !v.strictPass && v.flags.includes('imported'))).toBe(true);
    expect(verdicts.filter((v) => !v.officialPass).every((v) => v.failureClass === 'unknown')).toBe(true);
  });

  it('gives the same run id and task ids for the same file', () => {
    const a = importOverallStats(TEXT, 'a.json', fixedNow);
    const b = importOverallStats(TEXT, 'b.json', fixedNow);
    expect(b.run.runId).toBe(a.run.runId);
    expect(b.tasks.map((t) => t.taskId)).toEqual(a.tasks.map((t) => t.taskId));
  });

  it('names the file and the field of a malformed results file', () => {
    // Prepare
    const bad = JSON.parse(TEXT);
    bad.results.paperA.results.GPT_4O_MINI.results['init state'][0].passed = 'yes';

    // Act & Assess
    expect(() => importOverallStats(JSON.stringify(bad), 'bad.json')).toThrow(
      /^bad\.json: results\.paperA\.results\.GPT_4O_MINI\.results\.init state\.0\.passed: /,
    );
    expect(() => importOverallStats('{', 'broken.json')).toThrow(/^broken\.json: not JSON/);
  });
});
