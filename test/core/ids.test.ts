import { canonicalJson, runId, taskId, type TaskIdentity } from '../../core/ids';
import type { RunSpec } from '../../core/records';

const TASK: TaskIdentity = {
  paperDigest: 'a'.repeat(64),
  paper: 'alpha',
  file: 'model.py',
  snippet: 'outer',
  model: 'gpt-4o-mini',
  modelParams: { temperature: 0.6, maxTokens: 4096, extra: { b: 1, a: [1, { y: 2, x: 1 }] } },
  promptTemplateDigest: 'b'.repeat(64),
  withPaper: true,
  sample: 0,
};

const SPEC: RunSpec = {
  psetDigest: 'c'.repeat(64),
  psetRoot: '/somewhere/pset',
  models: [{ id: 'gpt-4o-mini', params: { temperature: 0.6 } }],
  samples: 3,
  withPaper: true,
  papers: ['beta', 'alpha'],
  promptTemplateDigest: 'd'.repeat(64),
  timeoutSec: 60,
  budgetUsd: 10,
};

describe('taskId', () => {
  it('is the same across calls and whatever the key order of the model parameters', () => {
    // Prepare
    const reordered: TaskIdentity = { ...TASK, modelParams: { extra: { a: [1, { x: 1, y: 2 }], b: 1 }, maxTokens: 4096, temperature: 0.6 } };

    // Act
    const ids = [taskId(TASK), taskId({ ...TASK }), taskId(reordered)];

    // Assess
    expect(ids[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(1);
  });

  it.each<[string, Partial<TaskIdentity>]>([
    ['sample', { sample: 1 }],
    ['model', { model: 'o3-mini' }],
    ['model parameters', { modelParams: { ...TASK.modelParams, temperature: 0.7 } }],
    ['prompt template digest', { promptTemplateDigest: 'e'.repeat(64) }],
    ['with/without paper', { withPaper: false }],
    ['paper digest', { paperDigest: 'f'.repeat(64) }],
    ['snippet', { snippet: 'inner' }],
    ['file', { file: 'other.py' }],
  ])('changes with the %s', (_what, change) => {
    expect(taskId({ ...TASK, ...change })).not.toBe(taskId(TASK));
  });
});

describe('runId', () => {
  it('ignores the budget, so a resumed run can raise it', () => {
    expect(runId({ ...SPEC, budgetUsd: 500 })).toBe(runId(SPEC));
    expect(runId({ ...SPEC, budgetUsd: null })).toBe(runId(SPEC));
  });

  it('ignores where the pset was read from and the order of the papers', () => {
    expect(runId({ ...SPEC, psetRoot: '/elsewhere' })).toBe(runId(SPEC));
    expect(runId({ ...SPEC, papers: ['alpha', 'beta'] })).toBe(runId(SPEC));
  });

  it.each<[string, Partial<RunSpec>]>([
    ['pset digest', { psetDigest: '0'.repeat(64) }],
    ['samples', { samples: 5 }],
    ['paper ablation', { withPaper: false }],
    ['papers', { papers: null }],
    ['timeout', { timeoutSec: 120 }],
    ['models', { models: [{ id: 'o3-mini', params: {} }] }],
  ])('changes with the %s', (_what, change) => {
    expect(runId({ ...SPEC, ...change })).not.toBe(runId(SPEC));
  });
});

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
  });
});
