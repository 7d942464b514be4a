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
 * completion (found through the execution's cursor, readyShards).
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
  const ready = input.generationDone ? open : await readyShards(deps, runId, execution, open);
  if (!ready.length) return { waves: previous.waves, undispatched: open.length };
  const number = previous.waves + 1;
  const key = cloudKeys.waveShards(runId, execution, number);
  // The shards first, the ledger second: a ledger never names a wave whose shards are not written.
  // Each with its paper as an ECS tag value, the shard task's rcb:shard tag (the Map's ItemSelector).
  await deps.blobs.put(key, JSON.stringify(ready.map((s) => ({ ...s, tag: ecsTagValue(s.paper) }))), 'application/json');
  await deps.blobs.put(cloudKeys.waveLedger(runId, execution, number), JSON.stringify([...dispatched, ...ready.map(shardId)]), 'application/json');
  return { waves: number, wave: { number, key, shards: ready.length }, undispatched: open.length - ready.length };
}

const cursorSchema = z.record(z.string(), z.array(z.string()));

/**
 * The open shards whose tasks are all settled. A settled task stays settled, so the cursor
 * (cloudKeys.waveCursor) keeps, per shard, only its tasks not yet seen settled: a check reads
 * each open shard's first such task, and the rest of a shard only when that one settled. Reads
 * per check are then the open shards plus the tasks newly settled, not every task of the run
 * (docs/cloud.md "What a run costs in infrastructure"). The task list is read once per execution.
 */
async function readyShards(deps: { store: RunStore; blobs: BlobStore }, runId: string, execution: string, open: ShardRef[]): Promise<ShardRef[]> {
  const key = cloudKeys.waveCursor(runId, execution);
  const raw = await deps.blobs.get(key);
  const pending = raw ? parsePayload(cursorSchema, JSON.parse(raw.toString('utf8')), key) : await firstCursor(deps.store, runId, open);
  const ids = open.map(shardId);
  const heads = ids.map((id) => pending[id]?.[0]).filter((t): t is string => t !== undefined);
  const settledHeads = await deps.store.getCompletions(heads);
  const moving = ids.filter((id) => pending[id]?.length && settledHeads.has(pending[id]![0]!));
  const rest = await deps.store.getCompletions(moving.flatMap((id) => pending[id]!.slice(1)));
  for (const id of moving) pending[id] = pending[id]!.slice(1).filter((t) => !rest.has(t));
  const ready = open.filter((s) => !pending[shardId(s)]?.length);
  // Only the open shards are kept: a shard in a wave is never looked at again.
  const kept = Object.fromEntries(ids.filter((id) => pending[id]?.length).map((id) => [id, pending[id]!] as const));
  if (!raw || moving.length) await deps.blobs.put(key, JSON.stringify(kept), 'application/json');
  return ready;
}

/** Every open shard's tasks, in the order the plan made them: the cursor before any check. */
async function firstCursor(store: RunStore, runId: string, open: ShardRef[]): Promise<Record<string, string[]>> {
  const tasks = await store.listTasks(runId);
  return Object.fromEntries(open.map((s) => [shardId(s), shardTasks(tasks, s).map((t: TaskRecord) => t.taskId)] as const));
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
