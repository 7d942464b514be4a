/**
 * `npm run bench -- report [--models N] [--tasks N] [--samples N] [--repeat N]`: how long
 * reports of a full sweep take, on synthetic verdicts of the public set's shape (212
 * tasks over 20 papers), now that every score carries bootstrap intervals. Prints medians
 * and the ratio of each report to scoring alone.
 */
import { scoreRun } from '../core/scoring';
import { formatTable } from '../core/report/format';
import { buildHtmlReport } from '../core/report/html-report';
import type { CompletionRecord, RunRecord, TaskRecord, Verdict } from '../core/records';
import type { PaperMeta } from '../core/types';

function flag(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

export async function benchReport(args: string[]): Promise<void> {
  const models = flag(args, 'models', 32);
  const taskCount = flag(args, 'tasks', 212);
  const samples = flag(args, 'samples', 3);
  const repeat = flag(args, 'repeat', 3);
  const papers: PaperMeta[] = Array.from({ length: 20 }, (_, i) => ({
    id: `paper${i}`,
    first_commit_date: '2025-01-01',
    annotated_file_paths: [],
    context_file_paths: [],
    extra: {},
  }));
  const tasks: TaskRecord[] = [];
  const verdicts = new Map<string, Verdict>();
  const completions = new Map<string, CompletionRecord>();
  let r = 7;
  for (let m = 0; m < models; m++) {
    for (let t = 0; t < taskCount; t++) {
      for (let s = 0; s < samples; s++) {
        const taskId = `${m}-${t}-${s}`;
        r = (r * 48271) % 2147483647;
        // Model m passes about (m+1)/(models+2) of its tasks.
        const ok = r % (models + 2) <= m;
        tasks.push({ taskId, paper: `paper${t % 20}`, file: 'f.py', snippet: `snippet ${t}`, loc: 1 + (t % 13), model: `model-${m}`, sample: s });
        const log = { text: ok ? '' : 'Traceback (most recent call last):\n  ...\nAssertionError\n', totalBytes: 40, truncated: false };
        verdicts.set(taskId, {
          taskId,
          officialPass: ok,
          strictPass: ok,
          flags: [],
          failureClass: ok ? null : 'functional',
          exitCode: ok ? 0 : 1,
          signal: null,
          durationMs: 500,
          stdout: log,
          stderr: log,
          executor: 'warm',
          sandbox: 'bwrap',
          createdAt: '',
        });
        completions.set(taskId, {
          taskId,
          model: `model-${m}`,
          text: '```python\nx = 1\n```\n',
          usage: { inputTokens: 30000, cachedInputTokens: 25000, outputTokens: 400, reasoningTokens: 0 },
          costUsd: 0.01,
          finishReason: 'stop',
          latencyMs: 2000,
          createdAt: '',
        });
      }
    }
  }
  const run = {
    runId: 'bench',
    status: 'succeeded',
    source: 'rcb',
    createdAt: '2026-01-01T00:00:00Z',
    spentUsd: 0,
    papers,
    models: {},
    spec: { psetRoot: '/bench', samples, withPaper: true, promptTemplateDigest: 'bench', budgetUsd: null, models: [] },
  } as unknown as RunRecord;
  const time = (f: () => unknown) => {
    const out: number[] = [];
    for (let i = 0; i < repeat; i++) {
      const t0 = process.hrtime.bigint();
      f();
      out.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    return median(out);
  };
  const score = () => scoreRun({ tasks, verdicts, papers, judge: 'strict', subset: 'all', cutoffs: {} });
  const scoring = time(score);
  const table = time(() => formatTable(score(), run));
  let size = 0;
  const html = time(() => {
    size = buildHtmlReport([{ label: 'bench', loaded: { run, tasks, verdicts, completions }, sources: { pset: null, template: null } }]).length;
  });
  process.stdout.write(
    `report of ${models} model(s) x ${taskCount} task(s) x ${samples} sample(s), median of ${repeat}:\n` +
      `  scoring with intervals: ${scoring.toFixed(0)} ms\n` +
      `  table:                  ${table.toFixed(0)} ms (${(table / scoring).toFixed(2)}x scoring)\n` +
      `  html:                   ${html.toFixed(0)} ms (${(html / scoring).toFixed(2)}x scoring), ${(size / 1e6).toFixed(1)} MB\n`,
  );
}
