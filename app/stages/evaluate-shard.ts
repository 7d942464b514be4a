/**
 * A stage of the cloud run (its entry point is the evaluation container, container/entry.ts):
 * EvaluateShard (an ECS task per shard): every answered task of one paper in one run is
 * tested with the executor of local runs, and the verdicts go to the run store and, with
 * their logs, to the bucket. This module reads the shard's environment and builds what the
 * use case (core/cloud/evaluate-shard.ts) needs: storage adapters, the run's context, the
 * warm executor and the per-image environment check; the entry point only runs it and exits.
 *
 * Environment (set by the task definition and by the workflow's containerOverrides):
 *   RCB_RUN_ID   run id                      (override, from the Map item)
 *   RCB_SHARD    paper id of the shard       (override, from the Map item)
 *   RCB_SHARD_REF the shard as JSON: paper, model, slice (override; absent: the whole paper)
 *   RCB_TABLE    DynamoDB run store table    (task definition)
 *   RCB_BUCKET   S3 artifacts bucket         (task definition)
 *   RCB_SCRATCH  the only writable directory (task definition; /scratch)
 *   RCB_PYTHON   the image's venv interpreter (task definition; /opt/venv/bin/python3)
 *   RCB_SANDBOX  auto | bwrap | uid | none  (task definition: uid, since Fargate refuses the
 *                user namespaces bubblewrap needs; default auto)
 * Optional: RCB_JOBS (tests at once, default one per CPU), RCB_DYNAMODB_ENDPOINT /
 * RCB_S3_ENDPOINT (the local emulator), RCB_SKIP_ENV_CHECK=1 (judge without checking the
 * paper's environment first).
 * Set by ECS: ECS_CONTAINER_METADATA_URI_V4, where the container reads its image's digest:
 * the environment check of the shard's paper is kept under it, so it runs once per image
 * (core/cloud/shard-environment.ts); without it, the shard checks its paper itself.
 */
import { loadRunContext, type RunContext } from '../../core/cloud/run-context';
import { evaluateShard, type EvaluateShardDeps, type EvaluateShardResult } from '../../core/cloud/evaluate-shard';
import { parsePayload, shardRefSchema, type ShardRef } from '../../core/cloud/payloads';
import { silentProgress } from '../../core/run/progress';
import { createLocalExecutor, defaultJobs, type WarmExecutor } from '../../adapters/executor';
import { parseSandboxMode, type SandboxMode } from '../../adapters/executor/executor-options';
import { loadStorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters, type StorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { containerImageDigest } from '../../adapters/aws/runtime/container-metadata';

/** What one shard task is told to do. */
export interface ShardEnv {
  runId: string;
  paper: string;
  /** The shard: its paper, and the model and slice when PlanRun cut the paper finer. */
  ref: ShardRef;
  table: string;
  bucket: string;
  scratch: string;
  /** The sandbox the executor runs tests in. */
  sandbox: SandboxMode;
}

/** Reads RCB_SANDBOX (unset: auto); any other value is an error naming the variable. */
export function parseSandbox(value: string | undefined): SandboxMode {
  return parseSandboxMode(value || 'auto', 'RCB_SANDBOX');
}

const REQUIRED = ['RCB_RUN_ID', 'RCB_SHARD', 'RCB_TABLE', 'RCB_BUCKET'] as const;

/** The shard's model and slice from RCB_SHARD_REF; its paper must be RCB_SHARD's. */
function shardRef(paper: string, raw: string | undefined): ShardRef {
  if (!raw) return { paper };
  const ref = parsePayload(shardRefSchema, JSON.parse(raw), 'RCB_SHARD_REF');
  if (ref.paper !== paper) throw new Error(`rcb container: RCB_SHARD_REF names paper ${ref.paper}, RCB_SHARD ${paper}`);
  return ref;
}

/** Reads and checks the shard's environment; the error names every missing variable. */
export function loadShardEnv(env: NodeJS.ProcessEnv = process.env): ShardEnv {
  const missing = REQUIRED.filter((name) => !env[name]);
  if (missing.length > 0) throw new Error(`rcb container: missing environment variable(s) ${missing.join(', ')}`);
  return {
    runId: env.RCB_RUN_ID as string,
    paper: env.RCB_SHARD as string,
    ref: shardRef(env.RCB_SHARD as string, env.RCB_SHARD_REF),
    table: env.RCB_TABLE as string,
    bucket: env.RCB_BUCKET as string,
    scratch: env.RCB_SCRATCH || '/scratch',
    sandbox: parseSandbox(env.RCB_SANDBOX),
  };
}

/** A line of the container's log (stderr, JSON). */
export type ShardLog = (level: 'info' | 'error', message: string, extra?: Record<string, unknown>) => void;

/** What a shard is evaluated with: the use case's dependencies and the run's context (its pset). */
export interface ShardDeps extends Omit<EvaluateShardDeps, 'executor'> {
  executor: WarmExecutor;
  ctx: RunContext;
}

/**
 * The shard's dependencies from its environment. `clients` replaces the AWS SDK clients built
 * from the environment (a test records every call they make against the task role).
 */
export async function shardDeps(
  shard: ShardEnv,
  env: NodeJS.ProcessEnv,
  log: ShardLog,
  clients: Parameters<typeof createStorageAdapters>[1] = {},
): Promise<ShardDeps> {
  const storage: StorageAdapters = createStorageAdapters({ ...loadStorageConfig(env), scratchDir: shard.scratch }, clients);
  // The run (its test time limit) and its pset, read once before the executor starts.
  const ctx = await loadRunContext(storage, shard.runId);
  const python = env.RCB_PYTHON || 'python3';
  const checkEnv = env.RCB_SKIP_ENV_CHECK !== '1' && storage.environments;
  const image = checkEnv ? await containerImageDigest(env) : null;
  if (image && image.digest === null) log('error', `environment check not kept per image: ${image.reason}; this shard checks its paper itself`);
  const executor = await createLocalExecutor({
    // The local run's executor: the shard's paper is imported once per worker, not per test.
    warm: true,
    python,
    jobs: env.RCB_JOBS ? Number(env.RCB_JOBS) : defaultJobs(),
    timeoutSec: ctx.run.spec.timeoutSec,
    sandbox: shard.sandbox,
    tmpDir: shard.scratch,
    // Nothing of this process's environment beyond the executor's own defaults.
    envAllow: [],
    warn: (message) => log('error', message),
  });
  // Its workers start (importing what the paper's tests need) while the shard's tasks and answers are read.
  executor.expectPapers?.(ctx.pset.papers.filter((p) => p.meta.id === shard.paper).map((p) => p.dir));
  const progress = { ...silentProgress, note: (message: string) => log('error', message, { runId: shard.runId, paper: shard.paper }) };
  const environment = checkEnv ? { checks: checkEnv, image: image?.digest ? `${image.digest}@${python}` : null, python } : undefined;
  return { ...storage, executor, progress, environment, ctx };
}

/** Evaluates the shard with its dependencies (the executor is the caller's to close). */
export function evaluateShardOf(shard: ShardEnv, deps: ShardDeps): Promise<EvaluateShardResult> {
  const { pset, manifest, run } = deps.ctx;
  return evaluateShard(deps, { ...shard.ref, runId: shard.runId, pset, runTasks: manifest.tasks, timeoutSec: run.spec.timeoutSec });
}
