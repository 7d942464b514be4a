/**
 * What a cloud run recorded of its infrastructure use, for the cost lines of its reports
 * (core/cost/recorded-infra.ts prices it): the shards PlanRun wrote (`runs/<id>/shards.json`),
 * each with its tasks' verdict durations; the shards that failed every attempt
 * (`runs/<id>/infra-errors.json`); the generator invocations, one per interactive answer and
 * attempt (answers of a provider batch have a batch id and no invocation of their own), with
 * their recorded latencies. The environment check is counted once per paper (shards of a
 * paper share it, core/cloud/shard-environment.ts).
 */
import type { BlobStore, RunStore } from '../store';
import type { RunRecord } from '../records';
import type { RecordedCloudRun, RecordedShard } from '../cost/recorded-infra';
import { cloudKeys, shardRefSchema, type InfraErrors } from './payloads';
import { shardTasks } from './shard-plan';
import { z } from 'zod';

export async function recordedCloudRun(deps: { store: RunStore; blobs: BlobStore }, run: RunRecord): Promise<RecordedCloudRun> {
  const runId = run.runId;
  const tasks = await deps.store.listTasks(runId);
  const verdicts = new Map((await deps.store.listVerdicts(runId)).map((v) => [v.taskId, v]));
  const completions = await deps.store.getCompletions(tasks.map((t) => t.taskId));
  const manifestKey = cloudKeys.shardManifest(runId);
  const raw = await deps.blobs.get(manifestKey);
  const parsed = raw ? z.array(shardRefSchema).safeParse(JSON.parse(raw.toString('utf8'))) : null;
  if (parsed && !parsed.success) throw new Error(`${manifestKey}: not a shard list (${parsed.error.issues[0]?.message})`);
  const refs = parsed?.data ?? [];
  const errors = await deps.blobs.get(cloudKeys.infraErrors(runId));
  const failed = new Set(errors ? (JSON.parse(errors.toString('utf8')) as InfraErrors).shards.map((s) => JSON.stringify(s.shard)) : []);
  const checkedPapers = new Set<string>();
  const shards: RecordedShard[] = refs.map((ref) => {
    const mine = shardTasks(tasks, ref);
    const tasksByModel: Record<string, number> = {};
    let testMs = 0;
    for (const t of mine) {
      tasksByModel[t.model] = (tasksByModel[t.model] ?? 0) + 1;
      testMs += verdicts.get(t.taskId)?.durationMs ?? 0;
    }
    const envCheckRan = !!run.environment && !checkedPapers.has(ref.paper);
    checkedPapers.add(ref.paper);
    return { paper: ref.paper, tasksByModel, testSec: testMs / 1000, envCheckRan, ...(failed.has(JSON.stringify(ref)) ? { failed: true } : {}) };
  });
  const generator: RecordedCloudRun['generator'] = {};
  const tasksByModel: Record<string, number> = {};
  for (const t of tasks) {
    tasksByModel[t.model] = (tasksByModel[t.model] ?? 0) + 1;
    const c = completions.get(t.taskId);
    if (!c || c.batchId) continue;
    const g = (generator[t.model] ??= { invocations: 0, sec: 0 });
    g.invocations += c.attempt ?? 1;
    g.sec += c.latencyMs / 1000;
  }
  const wallSec = Math.max(0, (Date.parse(run.updatedAt) - Date.parse(run.createdAt)) / 1000) || 0;
  return { where: 'cloud', shards, generator, tasksByModel, wallSec };
}
