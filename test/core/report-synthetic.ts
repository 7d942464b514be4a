/**
 * A synthetic run as large as the report must handle: 32 models x 212 tasks over 20 papers
 * (the public set's size), each answer long and each log at the store's cap, so the HTML
 * page's size is measured at its worst, without running a model or a test.
 */
import type { CompletionRecord, RunRecord, TaskRecord, Verdict } from '../../core/records';
import type { LoadedRun } from '../../core/report/loaded-run';
import type { FailureClass } from '../../core/types';

export const SWEEP_MODELS = 32;
export const SWEEP_TASKS = 212;
export const SWEEP_PAPERS = 20;
/** The store keeps each log head and tail within this cap (core/exec). */
const LOG_CHARS = 16_000;
const CLASSES: FailureClass[] = ['functional', 'syntax', 'name', 'runtime', 'no_code', 'timeout'];

/** Paper ids in mixed case, as the public set's (Diff-Transformer, advantage-alignment, ...). */
export function paperId(i: number): string {
  return i % 3 === 0 ? `Paper-${String.fromCharCode(65 + i)}` : `paper-${String.fromCharCode(97 + i)}`;
}

export function synthesizeSweep(models = SWEEP_MODELS, tasksPerModel = SWEEP_TASKS): LoadedRun {
  const modelIds = Array.from({ length: models }, (_, i) => `provider/model-${String(i).padStart(2, '0')}`);
  const papers = Array.from({ length: SWEEP_PAPERS }, (_, i) => paperId(i));
  const stamp = '2026-01-01T00:00:00.000Z';
  const run: RunRecord = {
    runId: 'sweep000000000000',
    spec: {
      psetDigest: 'sha256:pset',
      psetRoot: '/psets/public',
      models: modelIds.map((id) => ({ id, params: {} })),
      samples: 1,
      withPaper: true,
      papers,
      promptTemplateDigest: 'sha256:template',
      timeoutSec: 300,
      budgetUsd: null,
    },
    source: 'rcb',
    papers: papers.map((id) => ({ id, annotated_file_paths: ['model.py'], context_file_paths: [], extra: {} })),
    models: Object.fromEntries(modelIds.map((id) => [id, { config: {} }])),
    status: 'succeeded',
    createdAt: stamp,
    updatedAt: stamp,
    spentUsd: 0,
    reservedUsd: 0,
  };
  const tasks: TaskRecord[] = [];
  const verdicts = new Map<string, Verdict>();
  const completions = new Map<string, CompletionRecord>();
  const longLog = (seed: string) =>
    `${seed}\n${'Traceback (most recent call last):\n  File "model.py", line 12, in forward\n'.repeat(200)}`.slice(0, LOG_CHARS);
  modelIds.forEach((model, mi) => {
    for (let t = 0; t < tasksPerModel; t++) {
      const taskId = `${String(mi).padStart(2, '0')}${String(t).padStart(4, '0')}`.padEnd(32, '0');
      const paper = papers[t % papers.length];
      tasks.push({ taskId, paper, file: 'model.py', snippet: `snippet ${t}`, loc: 1 + (t % 40), model, sample: 0 });
      const pass = (t + mi) % 3 === 0;
      const cls = pass ? null : CLASSES[(t + mi) % CLASSES.length];
      const answer = `    x = torch.zeros(${t})\n${'    y = layer(x) + residual  # a long answer line\n'.repeat(80)}`;
      completions.set(taskId, {
        taskId,
        model,
        text: `Here is the code.\n\`\`\`python\n${answer}\`\`\`\n`,
        usage: { inputTokens: 9000, cachedInputTokens: 4000, outputTokens: 900, reasoningTokens: 300 },
        costUsd: 0.001 * (mi + 1),
        finishReason: 'stop',
        latencyMs: 1000 + t,
        createdAt: stamp,
      });
      verdicts.set(taskId, {
        taskId,
        officialPass: pass,
        strictPass: pass,
        flags: [],
        failureClass: cls,
        exitCode: pass ? 0 : 1,
        signal: null,
        durationMs: 2000,
        stdout: { text: longLog(`stdout of ${taskId}`), totalBytes: 90_000, truncated: true },
        stderr: { text: longLog(`stderr of ${taskId}`), totalBytes: 120_000, truncated: true },
        executor: 'warm',
        sandbox: 'bwrap',
        createdAt: stamp,
      });
    }
  });
  run.spentUsd = [...completions.values()].reduce((a, c) => a + c.costUsd, 0);
  return { run, tasks, verdicts, completions };
}
