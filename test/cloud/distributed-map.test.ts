/**
 * The emulator's Distributed Map (emulator/distributed-map.ts) against the shape Step
 * Functions gives a Map Run: items from the ItemReader's S3 object, one child per item,
 * MaxConcurrency, tolerated failures, ResultWriter files that Aggregate reads back.
 */
import { EXCEED_TOLERATED_FAILURE, runDistributedMap, withDistributedMapsAsTasks, type DistributedMapRun } from '../../emulator/distributed-map';
import { failedShards, infraErrorsOf } from '../../core/cloud/aggregate-run';
import { SweepTooLargeError } from '../../core/cloud/plan-cloud-run';
import { MemoryBlobStore } from './memory-blob-store';

const map = (extra: Record<string, unknown> = {}) => ({
  Type: 'Map',
  ItemReader: { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSON' }, Parameters: { Bucket: 'b', 'Key.$': '$.plan.key' } },
  ItemSelector: { 'runId.$': '$.runId', 'execution.$': '$$.Execution.Name', 'paper.$': '$$.Map.Item.Value.paper', 'shard.$': '$$.Map.Item.Value' },
  ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' }, StartAt: 'X', States: { X: { Type: 'Pass', End: true } } },
  MaxConcurrency: 3,
  ResultWriter: { Resource: 'arn:aws:states:::s3:putObject', Parameters: { Bucket: 'b', Prefix: 'runs/_map-runs' } },
  ResultPath: '$.evaluation',
  Next: 'Aggregate',
  ...extra,
});
// The largest shard list the default config admits.
const SHARDS = Array.from({ length: 5000 }, (_, i) => ({ paper: `p${i % 20}`, model: `m${Math.floor(i / 20)}` }));

async function run(extra: Record<string, unknown>, fails: (paper: string, model: string) => boolean) {
  const blobs = new MemoryBlobStore();
  await blobs.put('runs/r/shards.json', JSON.stringify(SHARDS));
  let running = 0;
  let peak = 0;
  const runs: DistributedMapRun[] = [];
  const promise = runDistributedMap({
    name: 'EvaluateShards',
    map: map(extra),
    input: { runId: 'r', plan: { key: 'runs/r/shards.json' } },
    executionName: 'r-2',
    blobs,
    onRun: (r) => runs.push(r),
    runChild: async (processor, input) => {
      expect(processor).not.toHaveProperty('ProcessorConfig');
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setImmediate(r));
      running--;
      const { shard } = input as { shard: { paper: string; model: string } };
      if (fails(shard.paper, shard.model)) throw Object.assign(new Error('stopped'), { name: 'States.TaskFailed' });
      return {};
    },
  });
  return { blobs, promise, peak: () => peak, runs };
}

describe('the emulated Distributed Map', () => {
  it('becomes a Task state keeping the Map state input, result path, catch and next', () => {
    const { states, maps } = withDistributedMapsAsTasks({ EvaluateShards: map(), Other: { Type: 'Pass', End: true } });
    expect(states.EvaluateShards).toMatchObject({ Type: 'Task', ResultPath: '$.evaluation', Next: 'Aggregate' });
    expect(states.EvaluateShards).not.toHaveProperty('ItemReader');
    expect([...maps.keys()]).toEqual(['EvaluateShards']);
  });

  it('runs 5,000 shards at most MaxConcurrency at once and writes the failed ones where Aggregate finds them', async () => {
    const { blobs, promise, peak, runs } = await run({ ToleratedFailurePercentage: 100 }, (p, m) => p === 'p7' && m === 'm13');
    const result = (await promise) as { ResultWriterDetails: { Key: string } };
    expect(peak()).toBe(3);
    expect(runs).toEqual([{ items: 5000, succeeded: 4999, failed: 1, peakConcurrency: 3, values: expect.any(Array) }]);
    expect(runs[0].values).toHaveLength(5000);
    const failed = await failedShards(blobs, result.ResultWriterDetails.Key);
    expect(failed).toEqual([{ shard: { paper: 'p7', model: 'm13' }, error: 'States.TaskFailed', cause: 'stopped' }]);
    const tasks = [0, 1].map((sample) => ({ taskId: `t${sample}`, paper: 'p7', model: 'm13', file: 'f', snippet: 's', loc: 1, sample }));
    expect(infraErrorsOf('r', failed, tasks, new Set(['t1']))).toEqual({ runId: 'r', tasks: 1, shards: [{ ...failed[0], taskIds: ['t0'] }] });
  });

  it('fails past its tolerated failure count with the error Step Functions raises', async () => {
    const { promise } = await run({ ToleratedFailureCount: 1 }, (p) => p === 'p3');
    await expect(promise).rejects.toMatchObject({ name: EXCEED_TOLERATED_FAILURE });
  });

  it('fails on one failed child when no threshold is set', async () => {
    const { promise } = await run({}, (p, m) => p === 'p0' && m === 'm0');
    await expect(promise).rejects.toMatchObject({ name: EXCEED_TOLERATED_FAILURE });
  });
});

describe('a sweep past the admitted shard count', () => {
  it('is refused with how to split it', () => {
    const err = new SweepTooLargeError(12_800, 5000, 40);
    expect(err.message).toContain('12800 evaluation shards, more than the 5000 this deployment admits (rcb:maxShards)');
    expect(err.message).toContain('split the sweep into runs of at most 15 model(s) each');
  });
});
