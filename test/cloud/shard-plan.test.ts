/**
 * Shards sized by work: one per paper and model, cut into equal slices when candidates x the
 * expected test time pass the target; the slices of a group cover each task exactly once.
 */
import { DEFAULT_SHARD_SIZING, plannedShardCount, planShards, shardSlice, shardTasks } from '../../core/cloud/shard-plan';
import type { TaskRecord } from '../../core/records';

const task = (paper: string, model: string, i: number): TaskRecord => ({
  taskId: `${paper}-${model}-${String(i).padStart(4, '0')}`,
  paper,
  file: 'f.py',
  snippet: `s${i % 20}`,
  loc: 3,
  model,
  sample: Math.floor(i / 20),
});

describe('planShards', () => {
  it("cuts the issue's sweep paper (20 snippets x 5 samples per model) into 20-minute slices per model", () => {
    // Prepare: 10 models x 100 candidates of one paper, 30 s per test.
    const tasks = Array.from({ length: 10 }, (_, m) => Array.from({ length: 100 }, (_, i) => task('big', `model-${m}`, i))).flat();

    // Act
    const shards = planShards(tasks, { testSecPerCandidate: 30, targetSec: 20 * 60 });

    // Assess: 100 x 30 s = 50 min per model, so 3 slices each (~17 min), 30 shards in all.
    expect(shards).toHaveLength(30);
    expect(shards.slice(0, 3)).toEqual([0, 1, 2].map((part) => ({ paper: 'big', model: 'model-0', part, parts: 3 })));
    const covered = shards.flatMap((s) => shardTasks(tasks, s).map((t) => t.taskId));
    expect(covered.sort()).toEqual(tasks.map((t) => t.taskId).sort());
    expect(Math.max(...shards.map((s) => shardTasks(tasks, s).length))).toBe(34);
  });

  it('keeps a small paper and model in one shard, and names its verdicts file by model and slice', () => {
    const tasks = [task('p', 'oracle', 0), task('p', 'oracle', 1), task('p', 'empty', 0)];
    const shards = planShards(tasks, DEFAULT_SHARD_SIZING);
    expect(shards).toEqual([
      { paper: 'p', model: 'oracle' },
      { paper: 'p', model: 'empty' },
    ]);
    expect(shardTasks(tasks, shards[0]).map((t) => t.taskId)).toEqual([tasks[0].taskId, tasks[1].taskId]);
    expect([shardSlice(shards[0]), shardSlice({ paper: 'p', model: 'org/m:1', part: 1, parts: 3 }), shardSlice({ paper: 'p' })]).toEqual([
      'oracle',
      'org_m_1-2of3',
      undefined,
    ]);
    // A shard of the whole paper (a run planned before shards had models) still holds every model.
    expect(shardTasks(tasks, { paper: 'p' })).toHaveLength(3);
  });
});

describe('plannedShardCount', () => {
  it('counts, before any task exists, the shards planShards makes of the run (what the infrastructure estimate prices)', () => {
    // Prepare: papers of 1, 20 and 300 snippets, 3 models, 5 samples: the last paper is sliced.
    const snippets = { small: 1, mid: 20, huge: 300 };
    const models = ['a', 'b', 'c'];
    const tasks = models.flatMap((model) =>
      Object.entries(snippets).flatMap(([paper, n]) => Array.from({ length: n * 5 }, (_, i) => ({ ...task(paper, model, i), sample: i % 5 }))),
    );

    // Act
    const planned = plannedShardCount(
      Object.values(snippets).map((n) => n * 5),
      models.length,
    );

    // Assess
    const shards = planShards(tasks, DEFAULT_SHARD_SIZING);
    expect(planned).toBe(shards.length);
    expect(shards.filter((s) => s.paper === 'huge' && s.model === 'a').length).toBeGreaterThan(1);
  });
});
