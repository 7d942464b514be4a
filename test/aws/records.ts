/** Small valid records of the RunStore port for the AWS adapter tests. */
import type { CompletionRecord, RunRecord, TaskRecord, Verdict } from '../../core/records';

export function makeRun(runId: string, overrides: { budgetUsd?: number | null; createdAt?: string; psetRoot?: string } = {}): RunRecord {
  const createdAt = overrides.createdAt ?? '2026-01-01T00:00:00.000Z';
  return {
    runId,
    spec: {
      psetDigest: 'sha256:pset',
      psetRoot: overrides.psetRoot ?? 's3://bucket/psets/pset',
      models: [{ id: 'gpt-test', params: { temperature: 0 } }],
      samples: 1,
      withPaper: false,
      papers: null,
      promptTemplateDigest: 'sha256:template',
      timeoutSec: 60,
      budgetUsd: overrides.budgetUsd === undefined ? null : overrides.budgetUsd,
    },
    source: 'rcb',
    papers: [{ id: 'paper-a', annotated_file_paths: ['model.py'], context_file_paths: [], extra: {} }],
    models: { 'gpt-test': { config: { temperature: 0 } } },
    status: 'planned',
    createdAt,
    updatedAt: createdAt,
    spentUsd: 0,
    reservedUsd: 0,
  };
}

export function makeTask(taskId: string, overrides: Partial<TaskRecord> = {}): TaskRecord {
  return { taskId, paper: 'paper-a', file: 'model.py', snippet: 'attention', loc: 7, model: 'gpt-test', sample: 0, ...overrides };
}

export function makeCompletion(taskId: string, text = `answer for ${taskId}`): CompletionRecord {
  return {
    taskId,
    model: 'gpt-test',
    text,
    usage: { inputTokens: 1200, cachedInputTokens: 0, outputTokens: 80, reasoningTokens: 0 },
    costUsd: 0.0123,
    finishReason: 'stop',
    latencyMs: 850,
    createdAt: '2026-01-01T00:01:00.000Z',
  };
}

export function makeVerdict(taskId: string, overrides: Partial<Verdict> = {}): Verdict {
  return {
    taskId,
    officialPass: true,
    strictPass: true,
    flags: [],
    failureClass: null,
    exitCode: 0,
    signal: null,
    durationMs: 420,
    stdout: { text: 'OK', totalBytes: 2, truncated: false },
    stderr: { text: '', totalBytes: 0, truncated: false },
    executor: 'warm',
    sandbox: 'bwrap',
    createdAt: '2026-01-01T00:02:00.000Z',
    ...overrides,
  };
}
