/**
 * The HTML page's task data (core/report/explore.ts): a small run keeps every text whole, a
 * large one cuts each to its share of the budget and says so; the data block cannot be
 * closed by a run's text; names sort case-insensitively.
 */
import { byName, dataBlock, exploreData, FULL_TASK_CHARS, readRow, TASK_TEXT_BUDGET } from '../../core/report/explore';
import { taskDetails } from '../../core/report/task-detail';
import { synthesizeSweep } from './report-synthetic';

const sources = { pset: null, template: null };

function dataOf(models: number, tasks: number) {
  const loaded = synthesizeSweep(models, tasks);
  const details = taskDetails(loaded, 'strict', sources);
  const ids = [...new Set(loaded.tasks.map((t) => t.model))];
  return { loaded, data: exploreData([{ label: 'runs/x', details, modelIndex: (m) => ids.indexOf(m) }], ids, 'strict') };
}

describe('the HTML page task data', () => {
  it('keeps a small run whole: every answer and log as the store has it (the log to its last 6000 characters)', () => {
    const { loaded, data } = dataOf(2, 10);
    expect(TASK_TEXT_BUDGET / loaded.tasks.length).toBeGreaterThanOrEqual(FULL_TASK_CHARS);
    // Only its 16,000-character logs are cut, to their last 6,000.
    expect(data.cut).toBe(true);
    const row = readRow(data, data.tasks[0]);
    const t = loaded.tasks[0];
    const answer = /```python\n([\s\S]*)```/.exec(loaded.completions.get(t.taskId)!.text)![1];
    expect(row.answer).toBe(answer);
    expect(row.answerChars).toBe(answer.length);
    expect(row.stderr).toBe(loaded.verdicts.get(t.taskId)!.stderr.text.slice(-6000));
    expect(row.v).toMatch(/^strict judge: (pass|fail); .* after 2\.00s \(warm executor, sandbox bwrap\)$/);
  });

  it('cuts a 32 x 212 sweep to its budget, keeping the head of each answer and the tail of each log', () => {
    const { loaded, data } = dataOf(32, 212);
    expect(data.cut).toBe(true);
    const text = data.tasks.map((r) => readRow(data, r)).reduce((a, r) => a + (r.answer?.length ?? 0) + (r.stdout?.length ?? 0) + (r.stderr?.length ?? 0), 0);
    expect(text).toBeLessThanOrEqual(TASK_TEXT_BUDGET);
    const row = readRow(data, data.tasks[5]);
    const t = loaded.tasks[5];
    expect(row.answerChars).toBeGreaterThan(row.answer!.length);
    expect(/```python\n([\s\S]*)```/.exec(loaded.completions.get(t.taskId)!.text)![1].startsWith(row.answer!)).toBe(true);
    expect(loaded.verdicts.get(t.taskId)!.stderr.text.endsWith(row.stderr!)).toBe(true);
  });

  it('writes the data so that no text of a run closes its script block', () => {
    const { data } = dataOf(1, 2);
    data.strings.push('</script><script>alert(1)</script>\u2028');
    const block = dataBlock(data);
    expect(block.match(/<\/script>/g)).toEqual(['</script>']);
    const json = block.slice(block.indexOf('>') + 1, block.lastIndexOf('</script>'));
    expect(JSON.parse(json).strings.at(-1)).toBe('</script><script>alert(1)</script>\u2028');
  });

  it('sorts names case-insensitively, as the public set needs (Diff-Transformer beside advantage-alignment)', () => {
    expect(['fractalgen', 'Diff-Transformer', 'advantage-alignment', 'DyT', 'eomt'].sort(byName)).toEqual([
      'advantage-alignment',
      'Diff-Transformer',
      'DyT',
      'eomt',
      'fractalgen',
    ]);
  });
});
