/**
 * The original harness's results file, overall_stats.json (SPEC 11), both ways: export a
 * run in that format, and import one as a run so its scores can be recomputed and compared.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { verdictWithoutRun } from '../judge';
import type { PaperMeta } from '../types';
import type { ModelInfo, RunRecord, TaskRecord, Verdict } from '../records';
import { normalizeCutoff } from '../contamination';
import type { ScoreReport } from '../scoring';

const SampleResult = z.object({
  snippet_code_line_count: z.number().int().nonnegative(),
  completion_idx: z.number().int().nonnegative(),
  passed: z.boolean(),
  exit_code: z.number().int().nullable(),
});
const Rates = z.object({ mean: z.number(), std: z.number(), rates: z.array(z.number()) });
export const OverallStats = z.object({
  results: z.record(
    z.object({
      paper_metadata: z.record(z.unknown()).default({}),
      results: z.record(z.object({ results: z.record(z.array(SampleResult)) })),
      problem_scores: z.record(z.object({ mean: z.number(), std: z.number() })).optional(),
    }),
  ),
  overall_scores: z
    // The original writes a rate block only when it has rates, so task_rates may be missing.
    .record(z.object({ line_rates: Rates, task_rates: Rates.optional(), llm_cfg: z.record(z.unknown()).optional() }))
    .optional(),
});
export type OverallStats = z.infer<typeof OverallStats>;

/**
 * A metadata value as the original harness holds it: it loads papers.yaml with PyYAML's
 * BaseLoader, so every scalar is a string and lists stay lists (of strings).
 */
function baseLoaderValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(baseLoaderValue);
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, baseLoaderValue(x)]));
  return String(v);
}

function metadataStrings(meta: PaperMeta): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const { extra, annotated_file_paths, context_file_paths, ...known } = meta;
  for (const [k, v] of Object.entries(known)) if (v !== undefined) out[k] = baseLoaderValue(v);
  out.annotated_file_paths = annotated_file_paths.length === 1 ? annotated_file_paths[0] : annotated_file_paths;
  // An empty list of context files was null or absent in papers.yaml; absent is the safe reading.
  if (context_file_paths.length) out.context_file_paths = context_file_paths.length === 1 ? context_file_paths[0] : context_file_paths;
  for (const [k, v] of Object.entries(extra)) out[k] = baseLoaderValue(v);
  return out;
}

/** overall_stats.json for a run, scored with `report` (which says the judge and subset). */
export function toOverallStats(run: RunRecord, tasks: TaskRecord[], verdicts: Map<string, Verdict>, report: ScoreReport): OverallStats {
  const results: OverallStats['results'] = {};
  const judgeStrict = report.judge === 'strict';
  for (const m of report.models) {
    for (const paperId of m.paperIds) {
      const meta = run.papers.find((p) => p.id === paperId);
      const paper = (results[paperId] ??= {
        paper_metadata: meta ? (run.source === 'import' ? (meta.extra as Record<string, unknown>) : metadataStrings(meta)) : {},
        results: {},
        problem_scores: {},
      });
      const byModel = (paper.results[m.model] ??= { results: {} });
      // The snippets the score kept: under the official judge one with an untested sample is left
      // out, as the original harness did; under either judge one with an infra_error sample.
      const scored = new Set(m.outcomes.filter((o) => o.paper === paperId).map((o) => `${o.file}\0${o.snippet}`));
      for (const t of tasks) {
        if (t.model !== m.model || t.paper !== paperId || !scored.has(`${t.file}\0${t.snippet}`)) continue;
        const v = verdicts.get(t.taskId);
        (byModel.results[t.snippet] ??= []).push({
          snippet_code_line_count: t.loc,
          completion_idx: t.sample,
          passed: !!v && (judgeStrict ? v.strictPass : v.officialPass),
          exit_code: v ? (v.exitCode ?? -1) : -1,
        });
      }
      for (const list of Object.values(byModel.results)) list.sort((a, b) => a.completion_idx - b.completion_idx);
      const ps = m.papers.find((p) => p.paper === paperId)!;
      paper.problem_scores![m.model] = { mean: ps.scaled.mean, std: ps.scaled.std };
    }
  }
  const overall_scores: NonNullable<OverallStats['overall_scores']> = {};
  for (const m of report.models) {
    overall_scores[m.model] = {
      line_rates: { mean: m.scaled.mean, std: m.scaled.std, rates: m.scaled.rates },
      task_rates: { mean: m.pass1.mean, std: m.pass1.std, rates: m.pass1.rates },
      llm_cfg: run.models[m.model]?.config ?? {},
    };
  }
  return { results, overall_scores };
}

export interface ImportedRun {
  run: RunRecord;
  tasks: TaskRecord[];
  verdicts: Verdict[];
}

function parseMeta(id: string, raw: Record<string, unknown>): PaperMeta {
  const str = (k: string) => (typeof raw[k] === 'string' && raw[k] !== 'None' ? (raw[k] as string) : undefined);
  const date = (k: string) => {
    const v = str(k);
    const m = v ? /^(\d{4}-\d{2}-\d{2})/.exec(v) : null;
    return m ? m[1] : undefined;
  };
  return {
    id,
    title: str('title'),
    venue: str('venue'),
    github_url: str('github_url'),
    arxiv_abs: str('arxiv_abs'),
    arxiv_date: date('arxiv_date'),
    arxiv_v1_date: date('arxiv_v1_date'),
    first_commit_date: date('first_commit_date'),
    last_commit_date: date('last_commit_date'),
    annotated_file_paths: [],
    context_file_paths: [],
    // Kept verbatim so an export gives back the metadata exactly as imported.
    extra: raw,
  };
}

/**
 * What reports need of a published model, from its `llm_cfg`: the cutoff (as `YYYY-MM`: the
 * file writes `2024-7` and `2024-11-17` too), display name, developer, openness; the whole
 * configuration kept as it was.
 */
function modelInfoOf(llmCfg: Record<string, unknown> | undefined): ModelInfo {
  const cfg = llmCfg ?? {};
  const text = (k: string) => (typeof cfg[k] === 'string' && cfg[k] ? (cfg[k] as string) : undefined);
  const cutoff = normalizeCutoff(cfg.knowledge_cutoff_date);
  const info: ModelInfo = { config: cfg };
  if (cutoff) info.knowledgeCutoff = cutoff;
  if (text('pretty_name')) info.displayName = text('pretty_name');
  if (text('developer')) info.developer = text('developer');
  if (typeof cfg.is_open === 'boolean') info.open = cfg.is_open;
  return info;
}

/** Parse an overall_stats.json text as a run. Errors name the file. */
export function importOverallStats(text: string, source: string, now: () => Date = () => new Date()): ImportedRun {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`${source}: not JSON (${(e as Error).message})`);
  }
  const parsed = OverallStats.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${source}: ${issue.path.join('.')}: ${issue.message}`);
  }
  const stats = parsed.data;
  const digest = createHash('sha256').update(text).digest('hex');
  const importedAt = now();
  const stamp = importedAt.toISOString();
  const tasks: TaskRecord[] = [];
  const verdicts: Verdict[] = [];
  const papers: PaperMeta[] = [];
  const models: RunRecord['models'] = {};
  let samples = 0;
  for (const [paperId, paper] of Object.entries(stats.results)) {
    papers.push(parseMeta(paperId, paper.paper_metadata));
    for (const [model, byModel] of Object.entries(paper.results)) {
      models[model] ??= modelInfoOf(stats.overall_scores?.[model]?.llm_cfg);
      for (const [snippet, list] of Object.entries(byModel.results)) {
        for (const r of list) {
          const taskId = createHash('sha256')
            .update(JSON.stringify([digest, paperId, snippet, model, r.completion_idx]))
            .digest('hex')
            .slice(0, 32);
          samples = Math.max(samples, r.completion_idx + 1);
          tasks.push({ taskId, paper: paperId, file: '', snippet, loc: r.snippet_code_line_count, model, sample: r.completion_idx });
          // The original harness has no strict judge: strictPass stays false, and reports
          // refuse the strict judge for imported runs.
          verdicts.push(
            verdictWithoutRun(taskId, r.passed ? null : 'unknown', () => importedAt, {
              officialPass: r.passed,
              flags: ['imported'],
              exitCode: r.exit_code,
            }),
          );
        }
      }
    }
  }
  const run: RunRecord = {
    runId: `import-${digest.slice(0, 16)}`,
    spec: {
      psetDigest: '',
      psetRoot: source,
      models: Object.keys(models).map((id) => ({ id, params: {} })),
      samples,
      withPaper: true,
      papers: papers.map((p) => p.id),
      promptTemplateDigest: '',
      timeoutSec: 0,
      budgetUsd: null,
    },
    source: 'import',
    papers,
    models,
    status: 'succeeded',
    createdAt: stamp,
    updatedAt: stamp,
    spentUsd: 0,
    reservedUsd: 0,
  };
  return { run, tasks, verdicts };
}
