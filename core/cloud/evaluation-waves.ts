/**
 * Pipelined evaluation: a shard (paper x model, or a slice of one) is evaluated as soon as
 * every one of its tasks is settled (answered, failed for good or dead-lettered), while other
 * models still generate. The run workflow's progress loop evaluates in waves: each
 * CheckProgress that finds shards newly ready writes them as wave n+1
 * (`runs/<id>/waves/<execution>/<n+1>/shards.json`) and the loop runs the evaluation
 * Distributed Map over that wave before its next pause; once generation is over, the shards
 * left form the last wave. The parent's history grows by a constant per wave, and there is
 * at most one wave per check (test/infra/history-bound.test.ts).
 *
 * Never twice: the wave a check writes is a function of the execution's shard manifest, the
 * ledger of the waves the loop has run (`previous.waves`, from the state, not from the bucket)
 * and the completions. A retried CheckProgress (same `previous`) writes the same wave number
 * again, over the one the Map has not read yet, and excludes every shard of waves 1..n; so
 * each shard of an execution is in exactly one wave, and so in one child execution.
 */
import type { BlobStore, RunStore } from '../store';
import type { TaskRecord } from '../records';
import { cloudKeys, mapResultsSchema, parsePayload, type ShardRef } from './payloads';
import { readShardManifest } from './plan-cloud-run';
import { shardTasks } from './shard-plan';
import { ecsTagValue } from './ecs-tag-value';
import { z } from 'zod';

/** A shard's stable name within a run: paper, model, slice. */
export function shardId(shard: ShardRef): string {
  return `${shard.paper}/${shard.model ?? '*'}/${shard.part ?? 0}of${shard.parts ?? 1}`;
}

/** What the loop's state says of the waves so far (the previous CheckProgress result, with the Map's result when it ran a wave). */
export interface WaveProgress {
  /** Waves dispatched so far in this execution. */
  waves: number;
  /** The Map Run of wave `waves`, when the loop ran it since the last check. */
  waveRun?: { ResultWriterDetails?: { Bucket: string; Key: string } };
}

export interface Wave {
  number: number;
  /** Blob key of the wave's shards (the Map's ItemReader). */
  key: string;
  shards: number;
}

export interface WavePlan {
  /** Waves dispatched, this one included. */
  waves: number;
  /** The wave to evaluate now, when shards became ready. */
  wave?: Wave;
  /** Shards of the execution not yet in any wave (after this one). */
  undispatched: number;
}

const ledgerSchema = z.array(z.string());

/** The shards of waves 1..n of an execution (empty for n = 0). */
export async function dispatchedShards(blobs: BlobStore, runId: string, execution: string, waves: number): Promise<Set<string>> {
  if (waves === 0) return new Set();
  const key = cloudKeys.waveLedger(runId, execution, waves);
  const raw = await blobs.get(key);
  if (!raw) throw new Error(`wave ${waves} of execution ${execution} has no ledger at ${key}: the loop's state and the bucket disagree`);
  return new Set(parsePayload(ledgerSchema, JSON.parse(raw.toString('utf8')), key));
}

/**
 * Records where the previous wave's Map Run wrote its results, then writes the next wave:
 * every undispatched shard when generation is over, else those whose tasks all have a
 * completion. `tasks` and `settledTaskIds` are read only when a wave may form.
 */
export async function planWave(
  deps: { store: RunStore; blobs: BlobStore },
  input: { runId: string; execution: string; previous: WaveProgress; generationDone: boolean },
): Promise<WavePlan> {
  const { runId, execution, previous } = input;
  const details = previous.waveRun?.ResultWriterDetails;
  if (details && previous.waves > 0) {
    const key = cloudKeys.waveResults(runId, execution, previous.waves);
    await deps.blobs.put(key, JSON.stringify(parsePayload(mapResultsSchema, details, 'the wave Map Run result')), 'application/json');
  }
  const manifest = await readShardManifest(deps.blobs, cloudKeys.shardManifest(runId));
  const dispatched = await dispatchedShards(deps.blobs, runId, execution, previous.waves);
  const open = manifest.filter((s) => !dispatched.has(shardId(s)));
  if (!open.length) return { waves: previous.waves, undispatched: 0 };
  let ready = open;
  if (!input.generationDone) {
    const tasks = await deps.store.listTasks(runId);
    const byShard = new Map(open.map((s) => [shardId(s), shardTasks(tasks, s)] as const));
    const wanted = [...new Set([...byShard.values()].flat().map((t: TaskRecord) => t.taskId))];
    const settled = await deps.store.getCompletions(wanted);
    ready = open.filter((s) => byShard.get(shardId(s))!.every((t) => settled.has(t.taskId)));
  }
  if (!ready.length) return { waves: previous.waves, undispatched: open.length };
  const number = previous.waves + 1;
  const key = cloudKeys.waveShards(runId, execution, number);
  // The shards first, the ledger second: a ledger never names a wave whose shards are not written.
  // Each with its paper as an ECS tag value, the shard task's rcb:shard tag (the Map's ItemSelector).
  await deps.blobs.put(key, JSON.stringify(ready.map((s) => ({ ...s, tag: ecsTagValue(s.paper) }))), 'application/json');
  await deps.blobs.put(cloudKeys.waveLedger(runId, execution, number), JSON.stringify([...dispatched, ...ready.map(shardId)]), 'application/json');
  return { waves: number, wave: { number, key, shards: ready.length }, undispatched: open.length - ready.length };
}

/** The results manifests of every wave an execution evaluated (each wave's ResultWriter manifest.json key), in wave order. */
export async function waveResultManifests(blobs: BlobStore, runId: string, execution: string): Promise<string[]> {
  const prefix = cloudKeys.wavesPrefix(runId, execution);
  const keys = (await blobs.list(prefix)).filter((k) => k.endsWith('/results.json'));
  const numbered = keys.map((k) => ({ k, n: Number(k.slice(prefix.length).split('/')[0]) })).sort((a, b) => a.n - b.n);
  const out: string[] = [];
  for (const { k } of numbered) {
    const raw = await blobs.get(k);
    if (raw) out.push(parsePayload(mapResultsSchema, JSON.parse(raw.toString('utf8')), k).Key);
  }
  return out;
}
