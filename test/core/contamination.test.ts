/**
 * The contamination-safe subsets: the original harness's rule (a paper is contaminated when
 * its first_commit_date is on or before the first day of the cutoff month; the common subset
 * at the latest cutoff among the models), an unknown cutoff never safe, and on the 32
 * published models every figure of docs/running-locally.md recomputed from the verdicts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { normalizeCutoff, subsetScopes } from '../../core/contamination';
import { contaminationTable, formatContaminationMarkdown } from '../../core/report/contamination-table';
import { importOverallStats } from '../../core/report/official';
import { withPsetDates } from '../../core/report/official-dates';
import { formatTable } from '../../core/report/format';
import { scoreRun, scoreStoredRun } from '../../core/scoring';
import type { PaperMeta } from '../../core/types';
import type { TaskRecord, Verdict } from '../../core/records';
import { REAL_PSET } from '../helpers/shared-data';
import { REPO } from '../helpers/cli';

const meta = (id: string, first_commit_date?: string): PaperMeta => ({ id, first_commit_date, annotated_file_paths: [], context_file_paths: [], extra: {} });

describe('cutoffs as the published files write them', () => {
  it('reads a month from YYYY-MM, YYYY-M and YYYY-MM-DD, and nothing else', () => {
    expect(['2025-01', '2024-7', '2024-11-17', '2023-9'].map(normalizeCutoff)).toEqual(['2025-01', '2024-07', '2024-11', '2023-09']);
    expect(['2024', '2024-13', 'soon', '', undefined, 202401].map(normalizeCutoff)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  });
});

describe('an unknown cutoff is never safe', () => {
  // p1 after both cutoffs, p2 after B's only.
  const papers = [meta('p1', '2025-03-01'), meta('p2', '2024-06-01')];
  const tasks: TaskRecord[] = ['A', 'B', 'U', 'oracle'].flatMap((model) =>
    ['p1', 'p2'].map((paper) => ({ taskId: `${model}-${paper}`, paper, file: 'f.py', snippet: 's', loc: 1, model, sample: 0 })),
  );
  const verdicts = new Map<string, Verdict>(
    tasks.map((t) => [t.taskId, { taskId: t.taskId, officialPass: true, strictPass: true, failureClass: null, flags: [] } as unknown as Verdict]),
  );
  const score = (subset: 'safe-common' | 'safe-per-model', models: string[]) =>
    scoreRun({
      tasks: tasks.filter((t) => models.includes(t.model)),
      verdicts,
      papers,
      judge: 'official',
      subset,
      cutoffs: { A: '2025-01', B: '2024-01' },
      cutoffFree: ['oracle'],
    });

  it('safe-per-model: the model without a cutoff has no score and says why; the others keep theirs', () => {
    const report = score('safe-per-model', ['A', 'B', 'U']);
    const by = Object.fromEntries(report.models.map((m) => [m.model, m]));
    expect([by.A.paperIds, by.B.paperIds, by.U.paperIds]).toEqual([['p1'], ['p1', 'p2'], []]);
    expect(by.U.cutoffUnknown).toEqual(['U']);
    const text = formatTable(report);
    expect(text).toMatch(/^U\s+n\/a/m);
    expect(text).toContain('U: n/a: cutoff unknown for U');
  });

  it('safe-common: one unknown cutoff leaves the common cutoff unknown, so no model is scored', () => {
    const report = score('safe-common', ['A', 'B', 'U']);
    expect(report.commonCutoff).toBeNull();
    expect(report.models.map((m) => [m.model, m.tasks, m.cutoffUnknown])).toEqual(
      expect.arrayContaining([
        ['A', 0, ['U']],
        ['B', 0, ['U']],
        ['U', 0, ['U']],
      ]),
    );
    const text = formatTable(report);
    expect(text).toContain('common cutoff unknown (cutoff unknown for U)');
    expect(text).toContain('A: n/a: cutoff unknown for U');
  });

  it('safe-common with known cutoffs takes the latest; the oracle, which learnt nothing, neither sets it nor is refused', () => {
    const report = score('safe-common', ['A', 'B', 'oracle']);
    expect(report.commonCutoff).toBe('2025-01');
    expect(report.models.map((m) => [m.model, m.paperIds])).toEqual(
      expect.arrayContaining([
        ['A', ['p1']],
        ['B', ['p1']],
        ['oracle', ['p1']],
      ]),
    );
    expect(subsetScopes('safe-per-model', ['oracle'], {}, new Set(['oracle'])).get('oracle')).toEqual({ cutoff: null, unknown: [] });
  });
});

const PUBLISHED = join(REAL_PSET, '..', 'outputs', '20llms_greedy', '2025-05-12-17-13-20', 'overall_stats.json');
const present = existsSync(PUBLISHED) && existsSync(join(REAL_PSET, 'papers.yaml'));
if (!present && !process.env.CI) console.warn(`SKIPPED the published contamination figures: no ${PUBLISHED} or ${REAL_PSET}/papers.yaml`);

interface RawStats {
  results: Record<string, { results: Record<string, { results: Record<string, { snippet_code_line_count: number; passed: boolean }[]> }> }>;
  overall_scores: Record<string, { line_rates: { mean: number }; llm_cfg: { knowledge_cutoff_date: string; pretty_name: string } }>;
}

(present || process.env.CI ? describe : describe.skip)('the 32 published models, contamination-safe', () => {
  const raw = JSON.parse(readFileSync(PUBLISHED, 'utf8')) as RawStats;
  // The papers.yaml dates as the original reads them (PyYAML BaseLoader: strings).
  const yamlDates = new Map(
    (parse(readFileSync(join(REAL_PSET, 'papers.yaml'), 'utf8')) as { id: string; first_commit_date: unknown }[]).map((p) => [
      p.id,
      String(p.first_commit_date instanceof Date ? p.first_commit_date.toISOString().slice(0, 10) : p.first_commit_date),
    ]),
  );
  // Recomputed here from the raw file, independently of rcb: LoC-weighted pass rate over the papers kept.
  const scaled = (model: string, keep: (paper: string) => boolean) => {
    let ok = 0;
    let all = 0;
    for (const [paper, byModel] of Object.entries(raw.results)) {
      if (!keep(paper)) continue;
      for (const list of Object.values(byModel.results[model]?.results ?? {}))
        for (const r of list) {
          all += r.snippet_code_line_count;
          if (r.passed) ok += r.snippet_code_line_count;
        }
    }
    return all ? (100 * ok) / all : null;
  };
  // The original's --contamination_free: contaminated when first_commit_date <= the first day of the cutoff month.
  const month = (c: string) => {
    const [y, m] = c.split('-').map(Number);
    return `${y}-${String(m).padStart(2, '0')}-01`;
  };
  const safeFor = (cutoff: string) => (paper: string) => !(yamlDates.get(paper)! <= month(cutoff));
  const latest = Object.values(raw.overall_scores)
    .map((s) => month(s.llm_cfg.knowledge_cutoff_date))
    .sort()
    .pop()!;

  const load = () => {
    const imported = importOverallStats(readFileSync(PUBLISHED, 'utf8'), PUBLISHED);
    const pset = Object.keys(raw.results).map((id) => meta(id, yamlDates.get(id)));
    return withPsetDates(imported, pset);
  };

  it('the importer keeps each model cutoff, display name, developer and openness from llm_cfg', () => {
    const { run } = load().imported;
    expect(Object.keys(run.models)).toHaveLength(32);
    expect(run.models.GEMINI_2_5_PRO_PREVIEW_05_06).toMatchObject({
      knowledgeCutoff: '2025-01',
      displayName: 'Gemini-2.5-Pro-Preview-05-06',
      developer: 'Google',
      open: false,
    });
    expect(run.models.GROK_3_BETA.knowledgeCutoff).toBe('2024-11');
    expect(run.models.DEEPSEEK_R1).toMatchObject({ displayName: 'DeepSeek-R1', open: true });
    for (const info of Object.values(run.models)) expect(info.knowledgeCutoff).toMatch(/^\d{4}-\d{2}$/);
  });

  it('takes the dates from papers.yaml, as the original does: minp moves out, 13 papers are safe at 2025-01', () => {
    const { imported, changes } = load();
    expect(changes).toEqual([{ paper: 'minp', inFile: '2025-03-15', inPset: '2024-11-13' }]);
    const { run, tasks, verdicts } = imported;
    const report = scoreStoredRun(run, tasks, new Map(verdicts.map((v) => [v.taskId, v])), 'official', 'safe-common');
    expect(report.commonCutoff).toBe('2025-01');
    const papers = [...new Set(report.models.flatMap((m) => m.paperIds))];
    expect(papers.sort()).toEqual(Object.keys(raw.results).filter(safeFor('2025-01')).sort());
    expect(papers).toHaveLength(13);
    expect(latest).toBe('2025-01-01');
  });

  it("every model's all, safe-common and safe-per-model score is the verdicts' own, and the docs' table is rcb's", () => {
    const { run, tasks, verdicts } = load().imported;
    const table = contaminationTable(run, tasks, new Map(verdicts.map((v) => [v.taskId, v])), 'official');
    expect(table.rows).toHaveLength(32);
    for (const row of table.rows) {
      const cutoff = raw.overall_scores[row.model].llm_cfg.knowledge_cutoff_date;
      expect(row.all).toBeCloseTo(raw.overall_scores[row.model].line_rates.mean, 9);
      expect(row.safeCommon).toBeCloseTo(scaled(row.model, safeFor('2025-01'))!, 9);
      expect(row.safePerModel).toBeCloseTo(scaled(row.model, safeFor(cutoff))!, 9);
    }
    const by = Object.fromEntries(table.rows.map((r) => [r.displayName, r]));
    expect([by['Gemini-2.5-Pro-Preview-05-06'].all!.toFixed(2), by['Gemini-2.5-Pro-Preview-05-06'].safeCommon!.toFixed(2)]).toEqual(['37.34', '33.30']);
    expect([by['O3 (High)'].all!.toFixed(2), by['O3 (High)'].safeCommon!.toFixed(2)]).toEqual(['32.16', '25.90']);
    expect(table.rows.filter((r) => r.safeCommon! < r.all!)).toHaveLength(31);
    // The docs print the table rcb makes, row for row (cells compared: the formatter aligns the columns).
    const cellsOf = (line: string) =>
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim());
    const docRows = readFileSync(join(REPO, 'docs', 'running-locally.md'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('| '))
      .map(cellsOf);
    const rows = formatContaminationMarkdown(table)
      .split('\n')
      .filter((l) => l.startsWith('| '))
      .map(cellsOf)
      .slice(2);
    expect(rows).toHaveLength(32);
    for (const r of rows) expect(docRows).toContainEqual(r);
  });
});
