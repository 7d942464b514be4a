/**
 * The environment check of the cloud's shards, on the bundled example with the real
 * executor and an interpreter that lacks numpy (a bare venv of Debian's python3): grouprms
 * imports numpy, the other papers do not. Its tasks are env_broken (no verdict, out of the
 * scores, named in the reports), the others are judged, and each paper's oracle runs once
 * per image, however many shards and runs start from that image.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestExecutor } from '../../core/executor';
import { createLocalExecutor } from '../../adapters/executor';
import { planCloudRun, readShardManifest } from '../../core/cloud/plan-cloud-run';
import { generateTask } from '../../core/cloud/generate-task';
import { evaluateShard, type EvaluateShardResult } from '../../core/cloud/evaluate-shard';
import { aggregateRun } from '../../core/cloud/aggregate-run';
import { checkShardEnvironment, EnvironmentCheckFailedError } from '../../core/cloud/shard-environment';
import { RunContextCache } from '../../core/cloud/run-context';
import { cloudKeys } from '../../core/cloud/payloads';
import { containerImageDigest, type MetadataGet } from '../../adapters/aws/runtime/container-metadata';
import { startContainerMetadata } from '../../emulator/container-metadata';
import { cloudFixture, type CloudFixture } from './cloud-fixture';

/** An interpreter without numpy: a venv of Debian's python3 without its system packages. */
const venv = mkdtempSync(join(tmpdir(), 'rcb-venv-'));
// Tests may run as another uid (the uid sandbox, as root): the venv must be theirs to read.
chmodSync(venv, 0o755);
execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', join(venv, 'env')]);
const SLIM = join(venv, 'env', 'bin', 'python');
const IMAGE = `sha256:0f0f@${SLIM}`;

let executor: TestExecutor;
beforeAll(async () => {
  executor = await createLocalExecutor({ python: SLIM, jobs: 2 });
});
afterAll(async () => {
  await executor?.close();
});

/** Counts the executor's test runs (the environment check's among them). */
function counted(inner: TestExecutor): TestExecutor & { candidates: string[] } {
  const candidates: string[] = [];
  return {
    candidates,
    run: (cs, onResult) => {
      candidates.push(...cs.map((c) => c.taskId));
      return inner.run(cs, onResult);
    },
    close: async () => undefined,
  };
}

async function planned(papers: string[]): Promise<{ f: CloudFixture; shards: { paper: string; model?: string }[]; contexts: RunContextCache }> {
  const f = await cloudFixture({ papers });
  const plan = await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
  const contexts = new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir });
  for (const { message } of f.queue.sent) await generateTask({ store: f.store, clients: f.clients }, await contexts.get(message.runId), message);
  return { f, shards: await readShardManifest(f.blobs, plan.shardManifestKey), contexts };
}

describe('evaluateShard with the environment check', () => {
  let f: CloudFixture;
  let results: EvaluateShardResult[];
  let runs: TestExecutor & { candidates: string[] };

  beforeAll(async () => {
    // Prepare: two papers, two models: two shards per paper, all started at once.
    const p = await planned(['grouprms', 'adamlite']);
    f = p.f;
    const ctx = await p.contexts.get(f.input.runId);
    runs = counted(executor);
    const environment = { checks: f.store, image: IMAGE, python: SLIM, pollMs: 50 };

    // Act
    results = await Promise.all(
      p.shards.map((shard) =>
        evaluateShard({ store: f.store, blobs: f.blobs, executor: runs, environment }, { ...shard, runId: f.input.runId, pset: ctx.pset }),
      ),
    );
  }, 120_000);

  it("runs each paper's oracle once for its shards, which started together", () => {
    expect(results).toHaveLength(4);
    expect(runs.candidates.filter((id) => id.startsWith('env-check:')).sort()).toEqual(['env-check:adamlite', 'env-check:grouprms']);
    expect(
      results
        .filter((r) => r.environment?.ran)
        .map((r) => r.paper)
        .sort(),
    ).toEqual(['adamlite', 'grouprms']);
  });

  it("leaves the broken paper's tasks without verdicts and judges the other paper's", async () => {
    const byPaper = (paper: string) => results.filter((r) => r.paper === paper);
    expect(byPaper('grouprms').map((r) => [r.envBroken, r.judged, r.environment?.runs, r.environment?.reason])).toEqual([
      [7, 0, false, 'missing module numpy'],
      [7, 0, false, 'missing module numpy'],
    ]);
    expect(byPaper('adamlite').every((r) => r.envBroken === 0 && r.environment?.runs === true)).toBe(true);
    const tasks = await f.store.listTasks(f.input.runId);
    const judged = new Set((await f.store.listVerdicts(f.input.runId)).map((v) => v.taskId));
    expect(
      tasks
        .filter((t) => judged.has(t.taskId))
        .map((t) => t.paper)
        .every((p) => p === 'adamlite'),
    ).toBe(true);
    expect(tasks.filter((t) => t.paper === 'adamlite').every((t) => judged.has(t.taskId))).toBe(true);
    const shardFile = JSON.parse((await f.blobs.get(cloudKeys.shardVerdicts(f.input.runId, 'grouprms', 'oracle')))!.toString());
    expect([shardFile.environment.runs, shardFile.verdicts]).toEqual([false, []]);
  });

  it('aggregates a succeeded run whose reports keep the broken paper out of the scores and name it', async () => {
    const summary = await aggregateRun({ store: f.store, blobs: f.blobs, environments: f.store }, f.input.runId);

    expect(summary.status).toBe('succeeded');
    const run = (await f.store.getRun(f.input.runId))!;
    expect(run.environment?.papers).toEqual([
      { paper: 'adamlite', runs: true, reason: null },
      { paper: 'grouprms', runs: false, reason: 'missing module numpy' },
    ]);
    expect(run.environment?.python).toBe(IMAGE);
    const report = JSON.parse((await f.blobs.get(`${summary.reportPrefix}report.json`))!.toString());
    const oracle = report.models.find((m: { model: string }) => m.model === 'oracle');
    // grouprms's 7 snippets, for this model.
    expect(oracle.envBroken).toBe(7);
    const board = (await f.blobs.get(`${summary.reportPrefix}leaderboard.txt`))!.toString();
    expect(board).toContain('env_broken');
    expect(board).toContain('grouprms');
    expect(board).toMatch(/oracle\s+100\.00/);
  });

  it("answers a later run's shard of the same image from the stored check, without running the oracle", async () => {
    const again = counted(executor);
    const ctx = await new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir }).get(f.input.runId);
    const checked = await checkShardEnvironment(
      { executor: again, checks: f.store },
      { runId: 'another-run', pset: ctx.pset, paper: 'grouprms', image: IMAGE, python: SLIM, owner: 'o', leaseMs: 60_000 },
    );
    expect(checked).toEqual({ result: { paper: 'grouprms', runs: false, reason: 'missing module numpy' }, ran: false });
    expect(again.candidates).toEqual([]);
    expect(await f.store.listRunPaperEnvironments('another-run')).toEqual([expect.objectContaining({ paper: 'grouprms', runs: false, image: IMAGE })]);
    // Another image (here: another interpreter in it) is checked afresh.
    const other = await checkShardEnvironment(
      { executor: again, checks: f.store },
      { runId: 'another-run', pset: ctx.pset, paper: 'grouprms', image: 'sha256:other@/usr/bin/python3', python: SLIM, owner: 'o', leaseMs: 60_000 },
    );
    expect(other.ran).toBe(true);
  });
});

describe('checkShardEnvironment', () => {
  it('takes over a check whose claim ran out with no result', async () => {
    const { f, contexts } = await planned(['adamlite']);
    const ctx = await contexts.get(f.input.runId);
    const digest = ctx.pset.papers[0].digest;
    // A shard that claimed the check and died.
    expect(await f.store.claimImageCheck(IMAGE, digest, 'dead-shard', 50)).toBe(true);
    const runs = counted(executor);
    const checked = await checkShardEnvironment(
      { executor: runs, checks: f.store },
      { runId: f.input.runId, pset: ctx.pset, paper: 'adamlite', image: IMAGE, python: SLIM, owner: 'me', leaseMs: 60_000, pollMs: 20 },
    );
    expect(checked).toEqual({ result: { paper: 'adamlite', runs: true, reason: null }, ran: true });
    expect(await f.store.getImageCheck(IMAGE, digest)).toEqual({ paper: 'adamlite', runs: true, reason: null });
  });

  it('fails on an executor failure and stores nothing: the shard is retried, the image not judged', async () => {
    const { f, contexts } = await planned(['adamlite']);
    const ctx = await contexts.get(f.input.runId);
    const broken: TestExecutor = {
      run: (cs, onResult) =>
        executor
          .run(cs, async (raw) => onResult?.({ ...raw, infraError: 'sandbox could not start' }))
          .then((raws) => raws.map((r) => ({ ...r, infraError: 'sandbox could not start' }))),
      close: async () => undefined,
    };
    for (const image of [IMAGE, null]) {
      await expect(
        checkShardEnvironment(
          { executor: broken, checks: f.store },
          { runId: f.input.runId, pset: ctx.pset, paper: 'adamlite', image, python: SLIM, owner: 'me', leaseMs: 60_000 },
        ),
      ).rejects.toThrow(EnvironmentCheckFailedError);
    }
    expect(await f.store.getImageCheck(IMAGE, ctx.pset.papers[0].digest)).toBeNull();
    expect(await f.store.listRunPaperEnvironments(f.input.runId)).toEqual([]);
  });
});

describe('containerImageDigest', () => {
  it('reads ImageID from the task metadata endpoint v4', async () => {
    const server = await startContainerMetadata({ imageId: 'sha256:abc', image: 'rcb:1', containerName: 'evaluator' });
    try {
      expect(await containerImageDigest({ ECS_CONTAINER_METADATA_URI_V4: server.uri })).toEqual({ digest: 'sha256:abc' });
    } finally {
      await server.close();
    }
  });

  it('says why when the digest cannot be had', async () => {
    expect(await containerImageDigest({})).toEqual({ digest: null, reason: expect.stringContaining('ECS_CONTAINER_METADATA_URI_V4 is not set') });
    const noImage: MetadataGet = async () => ({ status: 200, body: '{}' });
    expect(await containerImageDigest({ ECS_CONTAINER_METADATA_URI_V4: 'http://x' }, noImage)).toEqual({
      digest: null,
      reason: 'the container metadata has no ImageID',
    });
    const down: MetadataGet = async () => ({ status: 500, body: '' });
    expect(await containerImageDigest({ ECS_CONTAINER_METADATA_URI_V4: 'http://x' }, down)).toEqual({
      digest: null,
      reason: 'the task metadata endpoint answered HTTP 500',
    });
  });

  it('says why when nothing answers at the endpoint', async () => {
    // A port that was just listened on and closed: the connection is refused.
    const server = await startContainerMetadata({ imageId: 'sha256:abc', image: 'rcb:1', containerName: 'evaluator' });
    await server.close();
    expect(await containerImageDigest({ ECS_CONTAINER_METADATA_URI_V4: server.uri })).toEqual({
      digest: null,
      reason: expect.stringContaining('the task metadata endpoint could not be read'),
    });
  });
});
