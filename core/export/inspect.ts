/**
 * A run as Inspect AI eval logs (the JSON log format, version 2, of inspect_ai's
 * `log/_log.py` EvalLog): one log per model, one sample per task x sample index (the
 * sample index is Inspect's epoch), each with the exact prompt as input, the model's raw
 * answer as output, the original code as target, the verdict under both judges as scores
 * and the task's identity and failure class as metadata; the run's headline metrics (scaled
 * pass@1 and pass@1 with their 95% intervals, pass@k) as the log's results. So `inspect
 * view` and inspect_ai's log readers open an rcb run.
 */
import { createHash } from 'node:crypto';
import type { CompletionRecord, RunRecord, RunStatus, Verdict } from '../records';
import type { Judge, Pset } from '../types';
import type { ModelScore, ScoreReport } from '../scoring';
import type { TaskDetail } from '../report/task-detail';
import { describeVerdict } from '../report/task-detail';
import { originalBody } from '../prompt/mask';

/** The task name the logs carry (Inspect's `eval.task`). */
export const INSPECT_TASK = 'researchcodebench';

/** What the exporter reads: the run's tasks as `rcb show` sees them, the prompt prefixes, the pset (targets), a score report per judge. */
export interface InspectExportInput {
  run: RunRecord;
  details: TaskDetail[];
  /** Each paper's shared prompt prefix (instructions + paper text): a sample's input is the prefix and its own tail. */
  prefixes: Map<string, string>;
  /** The pset the run read, for each sample's target (the original code); null when not at hand. */
  pset: Pset | null;
  reports: Record<Judge, ScoreReport>;
  /** The judge whose scaled pass@1 is the headline (the run's default). */
  headlineJudge: Judge;
  rcbVersion: string;
}

type JsonObject = Record<string, unknown>;

/** One log to write: its file name (Inspect's `<created>_<task>_<id>.json` pattern) and its content. */
export interface InspectLogFile {
  model: string;
  fileName: string;
  log: JsonObject;
  samples: number;
  scored: number;
}

const STOP_REASONS: Record<CompletionRecord['finishReason'], string> = {
  stop: 'stop',
  length: 'max_tokens',
  content_filter: 'content_filter',
  other: 'unknown',
  error: 'unknown',
};

/** Inspect's EvalStatus of a run's status. */
function evalStatus(status: RunStatus): 'started' | 'success' | 'cancelled' | 'error' {
  if (status === 'succeeded') return 'success';
  if (status === 'failed') return 'error';
  if (status === 'cancelled' || status === 'budget_exhausted') return 'cancelled';
  return 'started';
}

/** A file-name-safe form of a model id (Inspect puts the task and an id in the name). */
/**
 * A file-name slug of a model id plus a short hash of the exact id: ids that slug alike
 * (`team a/model`, `team a model`) still get a file each.
 */
export function modelFileSlug(name: string): string {
  const slug =
    name
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[.-]+/, '')
      .slice(0, 80) || 'model';
  return `${slug}-${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
}

function sampleScore(v: Verdict, judge: Judge, answer: string | null): JsonObject {
  const pass = judge === 'strict' ? v.strictPass : v.officialPass;
  return {
    value: pass ? 1 : 0,
    answer: answer ?? '',
    explanation: describeVerdict(v, judge),
    metadata: {
      failure_class: pass ? null : v.failureClass,
      flags: v.flags,
      exit_code: v.exitCode,
      signal: v.signal,
      duration_ms: v.durationMs,
    },
  };
}

function usageOf(c: CompletionRecord | null): JsonObject | null {
  if (!c) return null;
  return {
    input_tokens: c.usage.inputTokens,
    output_tokens: c.usage.outputTokens,
    total_tokens: c.usage.inputTokens + c.usage.outputTokens,
    input_tokens_cache_read: c.usage.cachedInputTokens,
    reasoning_tokens: c.usage.reasoningTokens,
    total_cost: c.costUsd,
  };
}

/** The headline metrics of one model under one judge, in percent as rcb reports them. */
function evalScore(judge: Judge, m: ModelScore | undefined, scored: number, unscored: number): JsonObject {
  const metrics: Record<string, JsonObject> = {};
  const put = (name: string, value: number | null | undefined) => {
    if (typeof value === 'number' && Number.isFinite(value)) metrics[name] = { name, value, params: {}, metadata: { unit: 'percent' } };
  };
  if (m?.tasks) {
    put('scaled_pass@1', m.scaled.mean);
    put('scaled_pass@1_ci_low', m.scaled.ci?.low);
    put('scaled_pass@1_ci_high', m.scaled.ci?.high);
    put('pass@1', m.pass1.mean);
    put('pass@1_ci_low', m.pass1.ci?.low);
    put('pass@1_ci_high', m.pass1.ci?.high);
    for (const k of m.passAtK) {
      if (k.k === 1) continue;
      put(`pass@${k.k}`, k.tasks);
      put(`scaled_pass@${k.k}`, k.loc);
    }
  }
  return {
    name: judge,
    scorer: judge,
    scored_samples: scored,
    unscored_samples: unscored,
    params: {},
    metrics,
    metadata: {
      judge,
      tasks: m?.tasks ?? 0,
      loc: m?.loc ?? 0,
      failures: m?.failures ?? {},
      pending: m?.pending ?? 0,
      env_broken: m?.envBroken ?? 0,
      description:
        judge === 'strict'
          ? 'rcb strict judge: exit 0, no error marker, the suite ran to its end, no integrity flag'
          : 'the original harness rule: exit 0 and no error marker in the output',
    },
  };
}

/** The reference code of a task, from the pset at hand. */
function targetOf(pset: Pset | null, d: TaskDetail): string {
  const snippet = pset?.papers.find((p) => p.meta.id === d.task.paper)?.snippets.find((s) => s.file === d.task.file && s.name === d.task.snippet);
  return snippet ? originalBody(snippet) : '';
}

/** One Inspect eval log per model of the run, in the run's model order. */
export function inspectLogs(input: InspectExportInput): InspectLogFile[] {
  const { run, reports, headlineJudge } = input;
  const judges: Judge[] = headlineJudge === 'strict' ? ['strict', 'official'] : ['official', 'strict'];
  // An imported run records only the original rule: its strict verdicts are not evidence.
  const kept = run.source === 'import' ? judges.filter((j) => j === 'official') : judges;
  const models = [...new Set([...run.spec.models.map((m) => m.id), ...input.details.map((d) => d.task.model)])];
  const created = run.createdAt;
  return models.flatMap((model) => {
    const details = input.details.filter((d) => d.task.model === model);
    if (!details.length) return [];
    let scored = 0;
    const samples = details.map((d) => {
      const c = d.completion;
      const text = c && !c.error ? c.text : '';
      const prompt = d.promptTail === null ? null : `${input.prefixes.get(d.task.paper) ?? ''}${d.promptTail}`;
      const inputText = prompt ?? `(prompt not at hand: ${d.notes.join('; ') || 'the pset or template the run used is not on this machine'})`;
      const hasScore = d.verdict !== null && d.envBroken === null;
      if (hasScore) scored++;
      const usage = usageOf(c);
      const status = d.envBroken !== null ? 'env_broken' : d.verdict === null ? 'untested' : d.passed ? 'pass' : 'fail';
      const sample: JsonObject = {
        id: `${d.task.paper}/${d.task.file}/${d.task.snippet}`,
        epoch: d.task.sample + 1,
        input: inputText,
        target: targetOf(input.pset, d),
        messages: [{ role: 'user', content: inputText, source: 'input' }, ...(c ? [{ role: 'assistant', content: text, source: 'generate', model }] : [])],
        output: {
          model,
          choices: c
            ? [{ message: { role: 'assistant', content: text, source: 'generate', model }, stop_reason: STOP_REASONS[c.finishReason] ?? 'unknown' }]
            : [],
          completion: text,
          ...(usage ? { usage } : {}),
          ...(c ? { time: c.latencyMs / 1000 } : {}),
        },
        scores: hasScore ? Object.fromEntries(kept.map((j) => [j, sampleScore(d.verdict!, j, d.answer)])) : null,
        metadata: {
          paper: d.task.paper,
          file: d.task.file,
          snippet: d.task.snippet,
          loc: d.task.loc,
          sample: d.task.sample,
          task_id: d.task.taskId,
          status,
          failure_class: d.verdict?.failureClass ?? null,
          env_broken: d.envBroken,
          extracted_code: d.answer,
          notes: d.notes,
        },
        model_usage: usage ? { [model]: usage } : {},
        ...(c ? { completed_at: c.createdAt } : {}),
        ...(c?.error ? { error: { message: `${c.error.kind}: ${c.error.message}`, traceback: '', traceback_ansi: '' } } : {}),
        attachments: {},
      };
      return sample;
    });
    const unscored = samples.length - scored;
    const totals = details.reduce(
      (a, d) => {
        const u = d.completion?.usage;
        if (!u) return a;
        return {
          input_tokens: a.input_tokens + u.inputTokens,
          output_tokens: a.output_tokens + u.outputTokens,
          total_tokens: a.total_tokens + u.inputTokens + u.outputTokens,
          input_tokens_cache_read: a.input_tokens_cache_read + u.cachedInputTokens,
          reasoning_tokens: a.reasoning_tokens + u.reasoningTokens,
          total_cost: a.total_cost + (d.completion?.costUsd ?? 0),
        };
      },
      { input_tokens: 0, output_tokens: 0, total_tokens: 0, input_tokens_cache_read: 0, reasoning_tokens: 0, total_cost: 0 },
    );
    const spec = run.spec.models.find((m) => m.id === model);
    const distinct = [...new Set(details.map((d) => `${d.task.paper}/${d.task.file}/${d.task.snippet}`))];
    const evalId = `${run.runId}-${modelFileSlug(model)}`;
    const log: JsonObject = {
      version: 2,
      status: evalStatus(run.status),
      eval: {
        eval_id: evalId,
        run_id: run.runId,
        created,
        task: INSPECT_TASK,
        task_id: `${run.spec.psetDigest.slice(0, 16)}`,
        task_version: 0,
        task_attribs: {},
        task_args: {},
        solver: 'rcb',
        tags: ['rcb'],
        dataset: { name: INSPECT_TASK, location: run.spec.psetRoot, samples: distinct.length, sample_ids: distinct, shuffled: false },
        model,
        model_generate_config: typeof spec?.params.temperature === 'number' ? { temperature: spec.params.temperature } : {},
        model_args: spec?.params ?? {},
        config: { epochs: run.spec.samples, time_limit: run.spec.timeoutSec },
        packages: { rcb: input.rcbVersion },
        metadata: {
          rcb_run_id: run.runId,
          rcb_status: run.status,
          pset_digest: run.spec.psetDigest,
          prompt_template_digest: run.spec.promptTemplateDigest,
          with_paper: run.spec.withPaper,
          papers: run.spec.papers,
          source: run.source,
        },
        scorers: kept.map((j) => ({ name: j, options: {}, metrics: [], metadata: {} })),
        headline_metric: { scorer: headlineJudge, metric: 'scaled_pass@1' },
      },
      plan: { name: 'plan', steps: [{ solver: 'rcb', params: {} }], config: {} },
      results: {
        total_samples: samples.length,
        completed_samples: samples.filter((s) => s.scores !== null || (s.output as JsonObject).completion !== '').length,
        scores: kept.map((j) =>
          evalScore(
            j,
            reports[j].models.find((m) => m.model === model),
            scored,
            unscored,
          ),
        ),
        headline: { scorer: headlineJudge, metric: 'scaled_pass@1' },
        metadata: { interval: reports[headlineJudge].interval, notes: reports[headlineJudge].notes },
      },
      stats: { started_at: created, completed_at: run.updatedAt, model_usage: { [model]: totals } },
      ...(run.status === 'failed' ? { error: { message: run.error ?? 'the run failed', traceback: '', traceback_ansi: '' } } : {}),
      invalidated: false,
      tags: [],
      metadata: {},
      samples,
    };
    const stamp = created.replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
    return [{ model, fileName: `${stamp}_${INSPECT_TASK}_${modelFileSlug(model)}-${run.runId}.json`, log, samples: samples.length, scored }];
  });
}
