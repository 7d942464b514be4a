/**
 * Pipelined evaluation (core/cloud/evaluation-waves.ts): CheckProgress writes a wave of the
 * shards whose tasks are all settled while other models still generate, never puts a shard in
 * two waves (a retried check rewrites the same wave), and records each wave's Map Run results
 * for Aggregate.
 */
import { planCloudRun, readShardManifest } from '../../core/cloud/plan-cloud-run';
import { generateTask } from '../../core/cloud/generate-task';
import { checkProgress, scheduleForDeadline } from '../../core/cloud/check-progress';
import { RunContextCache } from '../../core/cloud/run-context';
import { cloudKeys, type CheckProgressResult, type ShardRef } from '../../core/cloud/payloads';
import { shardId, waveResultManifests, type WaveProgress } from '../../core/cloud/evaluation-waves';
import { DEFAULT_POLL_SCHEDULE } from '../../core/cloud/generation-polling';
import { cloudFixture, type CloudFixture } from './cloud-fixture';

const EXECUTION = 'run-exec-1';

async function generate(f: CloudFixture, model: string): Promise<void> {
  const contexts = new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir });
  for (const { message, model: m } of f.queue.sent) {
    if (m !== model) continue;
    await generateTask({ store: f.store, clients: f.clients }, await contexts.get(message.runId), message);
  }
}

async function waveShards(f: CloudFixture, result: CheckProgressResult): Promise<ShardRef[]> {
  return result.wave ? readShardManifest(f.blobs, result.wave.key) : [];
}

/** The state the loop hands the next check: this result, and the Map Run of its wave when it had one. */
function after(result: CheckProgressResult): WaveProgress {
  return {
    waves: result.waves ?? 0,
    ...(result.wave ? { waveRun: { ResultWriterDetails: { Bucket: 'b', Key: `runs/_map-runs/wave-${result.wave.number}/manifest.json` } } } : {}),
  };
}

describe('evaluation waves', () => {
  it("evaluates the first model's shards while the second generates, each shard in one wave, a retried check rewriting the same wave", async () => {
    // Prepare: oracle answered, empty not yet.
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const manifest = await readShardManifest(f.blobs, cloudKeys.shardManifest(f.input.runId));
    await generate(f, 'oracle');
    const check = (previous: WaveProgress) => checkProgress(f.store, f.input.runId, { waves: { blobs: f.blobs, execution: EXECUTION, previous } });

    // Act
    const first = await check({ waves: 0 });
    const retried = await check({ waves: 0 });
    const idle = await check(after(retried));
    await generate(f, 'empty');
    const second = await check(after(idle));
    const last = await check(after(second));

    // Assess: wave 1 is the oracle's shards, written again (not a wave 2) by the retry.
    expect([first.done, first.waves, first.wave?.number]).toEqual([false, 1, 1]);
    expect([retried.waves, retried.wave?.number, retried.wave?.key]).toEqual([1, 1, first.wave?.key]);
    const wave1 = await waveShards(f, retried);
    expect(new Set(wave1.map((s) => s.model))).toEqual(new Set(['oracle']));
    expect(wave1).toHaveLength(manifest.filter((s) => s.model === 'oracle').length);
    // Nothing new ready: no wave, not done.
    expect([idle.done, idle.waves, idle.wave]).toEqual([false, 1, undefined]);
    // Generation over: the rest is the last wave, with the shortest pause; then the loop ends.
    expect([second.done, second.waves, second.wave?.number, second.waitSec]).toEqual([false, 2, 2, DEFAULT_POLL_SCHEDULE.minSec]);
    const wave2 = await waveShards(f, second);
    expect([last.done, last.waves, last.wave]).toEqual([true, 2, undefined]);
    // Every shard of the execution in exactly one wave.
    const all = [...wave1, ...wave2].map(shardId);
    expect(new Set(all).size).toBe(all.length);
    expect(new Set(all)).toEqual(new Set(manifest.map(shardId)));
    // Each wave's Map Run results, recorded by the check after it, in wave order, for Aggregate.
    expect(await waveResultManifests(f.blobs, f.input.runId, EXECUTION)).toEqual([
      'runs/_map-runs/wave-1/manifest.json',
      'runs/_map-runs/wave-2/manifest.json',
    ]);
  });

  it('a stopped run sends every shard left in one wave; a check without waves behaves as before', async () => {
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    await f.store.setRunStatus(f.input.runId, 'cancelled');
    const plain = await checkProgress(f.store, f.input.runId);
    const waved = await checkProgress(f.store, f.input.runId, { waves: { blobs: f.blobs, execution: EXECUTION, previous: { waves: 0 } } });
    expect([plain.done, plain.waves, plain.wave]).toEqual([true, undefined, undefined]);
    expect([waved.done, waved.wave?.shards]).toEqual([false, (await readShardManifest(f.blobs, cloudKeys.shardManifest(f.input.runId))).length]);
  });

  it('a check while generation goes on reads one task per open shard, not every task of the run', async () => {
    // Prepare: the oracle answered; reads counted from the second check on.
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const manifest = await readShardManifest(f.blobs, cloudKeys.shardManifest(f.input.runId));
    await generate(f, 'oracle');
    const reads = { listTasks: 0, completionKeys: 0 };
    const counted = Object.create(f.store) as typeof f.store;
    counted.listTasks = async (runId) => (reads.listTasks++, f.store.listTasks(runId));
    counted.getCompletions = async (ids) => ((reads.completionKeys += ids.length), f.store.getCompletions(ids));
    const tasks = (await f.store.listTasks(f.input.runId)).length;
    const settled = (await f.store.getCompletions((await f.store.listTasks(f.input.runId)).map((t) => t.taskId))).size;
    // The run item's counters, as the settling workers keep them (the production CheckProgress reads them).
    const counters = { setTotal: async () => {}, addCounts: async () => {}, getCounts: async () => ({ total: tasks, settled, failed: 0, judged: 0 }) };
    const check = (previous: WaveProgress) => checkProgress(counted, f.input.runId, { counters, waves: { blobs: f.blobs, execution: EXECUTION, previous } });
    const first = await check({ waves: 0 });
    const open = manifest.length - (first.wave?.shards ?? 0);
    Object.assign(reads, { listTasks: 0, completionKeys: 0 });

    // Act: nothing new settled.
    const idle = await check(after(first));

    // Assess: the same verdict as a full read, from one key per open shard; the task list not read again.
    expect([idle.done, idle.waves, idle.wave]).toEqual([false, 1, undefined]);
    expect(open).toBeGreaterThan(0);
    expect(tasks).toBeGreaterThan(manifest.length);
    expect(reads).toEqual({ listTasks: 0, completionKeys: open });
  });

  it('stretches the longest pause with a deadline past 24 h, so a 48 h run is checked no more often than a 24 h one', () => {
    expect(scheduleForDeadline(24 * 3600)).toEqual(DEFAULT_POLL_SCHEDULE);
    expect(scheduleForDeadline(3600)).toEqual(DEFAULT_POLL_SCHEDULE);
    expect(scheduleForDeadline(48 * 3600)).toEqual({ minSec: 30, maxSec: 600 });
  });
});
