import { defaultJudge } from '../../core/report/build-report';
import type { RunRecord } from '../../core/records';

const run = (source: RunRecord['source']) => ({ source }) as RunRecord;

describe('defaultJudge', () => {
  it('is strict for rcb runs in every format but the original harness format', () => {
    for (const format of ['table', 'json', 'csv', 'markdown'] as const) expect(defaultJudge(run('rcb'), format)).toBe('strict');
    expect(defaultJudge(run('rcb'), 'official')).toBe('official');
  });

  it('is official for imported runs, which record only the original rule', () => {
    expect(defaultJudge(run('import'), 'table')).toBe('official');
  });
});
