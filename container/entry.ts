/**
 * Entry point of the evaluation container (`node dist/container/entry.js`): evaluate one
 * shard, i.e. every answered task of one paper in one run, with the same executor as local
 * runs, and write the verdicts (run store) and the shard's verdicts with logs (bucket).
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
 *
 * Exit status: 0 when every answered task of the shard has a verdict (failing tests are
 * verdicts, not errors); 1 only when the shard could not be evaluated (store, bucket,
 * executor failure), which fails the EvaluateShard state and retries it. Verdicts are
 * first-write-wins, so a retry tests only what is not yet judged.
 *
 * Test processes never see the task's credentials: the executor gives them an allow-listed
 * environment (no AWS_* variable, so neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor keys)
 * and, as the image runs as root (with only the capabilities the uid sandbox needs), a
 * separate unprivileged uid per slot, which cannot read this process's /proc entries.
 */
import { loadRunContext } from '../core/cloud/run-context';
import { evaluateShard } from '../core/cloud/evaluate-shard';
import { parsePayload, shardRefSchema, type ShardRef } from '../core/cloud/payloads';
import { silentProgress, type Progress } from '../core/run/progress';
import { createLocalExecutor, defaultJobs } from '../adapters/executor';
import { parseSandboxMode, type SandboxMode } from '../adapters/executor/executor-options';
import { loadStorageConfig } from '../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../adapters/aws/runtime/cloud-adapters';
import { containerImageDigest } from '../adapters/aws/runtime/container-metadata';

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

/** Variables that carry the task role's credentials; named so tests can check none reaches a test process. */
export const CREDENTIAL_VARIABLES = [
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const;

function log(level: 'info' | 'error', message: string, extra: Record<string, unknown> = {}): void {
  process.stderr.write(`${JSON.stringify({ level, message, ...extra })}\n`);
}

/**
 * Evaluates the shard the environment names. `clients` replaces the AWS SDK clients built
 * from the environment (a test records every call they make against the task role).
 */
export async function main(env: NodeJS.ProcessEnv = process.env, clients: Parameters<typeof createStorageAdapters>[1] = {}): Promise<number> {
  const shard = loadShardEnv(env);
  const storage = createStorageAdapters({ ...loadStorageConfig(env), scratchDir: shard.scratch }, clients);
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
  const stop = () => {
    // Spot interruption: verdicts already written stay; the retried shard does the rest.
    log('error', 'SIGTERM: stopping; finished verdicts are kept', { runId: shard.runId, paper: shard.paper });
    void executor.close().finally(() => process.exit(1));
  };
  process.once('SIGTERM', stop);
  try {
    const progress: Progress = { ...silentProgress, note: (message) => log('error', message, { runId: shard.runId, paper: shard.paper }) };
    const environment = checkEnv ? { checks: checkEnv, image: image?.digest ? `${image.digest}@${python}` : null, python } : undefined;
    const result = await evaluateShard({ ...storage, executor, progress, environment }, { ...shard.ref, runId: shard.runId, pset: ctx.pset });
    log('info', 'shard evaluated', { ...result });
    return 0;
  } finally {
    process.off('SIGTERM', stop);
    await executor.close();
  }
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      log('error', err instanceof Error ? err.message : String(err), { stack: err instanceof Error ? err.stack : undefined });
      process.exit(1);
    },
  );
}
