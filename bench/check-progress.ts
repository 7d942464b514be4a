/**
 * `npm run bench -- check-progress [--shards N] [--tasks N]`: CheckProgress's wave planning
 * at `rcb:maxShards` against dynalite (emulator/local-aws.ts, metered): the time, heap and
 * read units of each check while generation goes on, the first one (which reads the task
 * list once) and the later ones (the cursor, core/cloud/evaluation-waves.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalAws } from '../emulator/local-aws';
import { DynamoRunStore } from '../adapters/aws/dynamo-run-store';
import { S3BlobStore } from '../adapters/aws/s3-blob-store';
import { checkProgress } from '../core/cloud/check-progress';
import { cloudKeys } from '../core/cloud/payloads';
import type { RunRecord, TaskRecord } from '../core/records';
import { MAX_SHARDS_DEFAULT } from '../core/cloud/shard-plan';

function flag(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

export async function benchCheckProgress(args: string[]): Promise<void> {
  const shards = flag(args, '--shards', MAX_SHARDS_DEFAULT);
  const taskCount = flag(args, '--tasks', 33_920);
  const scratchDir = mkdtempSync(join(tmpdir(), 'rcb-bench-check-'));
  const aws = await startLocalAws({ scratchDir, meter: true });
  try {
    const store = new DynamoRunStore(aws.doc, { tableName: aws.storage.table });
    const blobs = new S3BlobStore(aws.s3, { bucket: aws.storage.bucket });
    const runId = 'bench-check';
    const now = new Date().toISOString();
    await store.createRun({
      runId,
      spec: {} as RunRecord['spec'],
      source: 'rcb',
      papers: [],
      models: {},
      status: 'generating',
      createdAt: now,
      updatedAt: now,
      spentUsd: 0,
      reservedUsd: 0,
    });
    const refs = Array.from({ length: shards }, (_, i) => ({ paper: `p${i % 20}`, model: `m${Math.floor(i / 20)}` }));
    const tasks: TaskRecord[] = Array.from(
      { length: taskCount },
      (_, i) => ({ taskId: `t${i}`, ...refs[i % shards]!, file: 'f.py', snippet: 's', loc: 1, sample: 0 }) as TaskRecord,
    );
    let t0 = Date.now();
    await store.putTasks(runId, tasks);
    await store.setTotal(runId, taskCount);
    await blobs.put(cloudKeys.shardManifest(runId), JSON.stringify(refs), 'application/json');
    process.stdout.write(`seeded ${taskCount} tasks in ${shards} shards in ${Date.now() - t0} ms\n`);
    let previous = { waves: 0 };
    for (let check = 1; check <= 3; check++) {
      const before = { ...aws.usage! };
      global.gc?.();
      t0 = Date.now();
      const heap0 = process.memoryUsage().heapUsed;
      const r = await checkProgress(store, runId, { counters: store, waves: { blobs, execution: 'bench', previous } });
      const ms = Date.now() - t0;
      const heapMb = (process.memoryUsage().heapUsed - heap0) / 2 ** 20;
      previous = { waves: r.waves ?? 0 };
      process.stdout.write(
        `check ${check}: ${ms} ms, heap +${heapMb.toFixed(1)} MB, ${(aws.usage!.readUnits - before.readUnits).toFixed(0)} RRU, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB\n`,
      );
    }
  } finally {
    await aws.close();
    rmSync(scratchDir, { recursive: true, force: true });
  }
}
