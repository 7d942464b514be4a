/**
 * Entry point of the evaluation container (`node dist/container/entry.js`): evaluate one
 * shard, i.e. every answered task of one paper in one run, with the same executor as local
 * runs, and write the verdicts (run store) and the shard's verdicts with logs (bucket).
 *
 * Environment (set by the task definition and by the workflow's containerOverrides):
 *   RCB_RUN_ID   run id                      (override, from the Map item)
 *   RCB_SHARD    paper id of the shard       (override, from the Map item)
 *   RCB_TABLE    DynamoDB run store table    (task definition)
 *   RCB_BUCKET   S3 artifacts bucket         (task definition)
 *   RCB_SCRATCH  the only writable directory (task definition; /scratch)
 * Optional: RCB_PYTHON (interpreter, default python3 on PATH), RCB_JOBS (tests at once,
 * default one per CPU), RCB_SANDBOX=none (no bubblewrap, where the host cannot nest
 * namespaces), RCB_DYNAMODB_ENDPOINT / RCB_S3_ENDPOINT (the local emulator).
 *
 * Exit status: 0 when every answered task of the shard has a verdict (failing tests are
 * verdicts, not errors); 1 only when the shard could not be evaluated (store, bucket,
 * executor failure), which fails the EvaluateShard state and retries it. Verdicts are
 * first-write-wins, so a retry tests only what is not yet judged.
 *
 * Test processes never see the task's credentials: the executor gives them an allow-listed
 * environment (no AWS_* variable, so neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor keys)
 * and, when it runs as root, a separate uid per slot. The image runs as uid 10001, so there
 * the separation is the sandbox's (bubblewrap) plus the stripped environment.
 */
import { loadRunContext } from '../core/cloud/run-context';
import { evaluateShard } from '../core/cloud/evaluate-shard';
import { silentProgress, type Progress } from '../core/run/progress';
import { createLocalExecutor, defaultJobs } from '../adapters/local/executor';
import { loadStorageConfig } from '../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../adapters/aws/runtime/cloud-adapters';

/** What one shard task is told to do. */
export interface ShardEnv {
  runId: string;
  paper: string;
  table: string;
  bucket: string;
  scratch: string;
}

const REQUIRED = ['RCB_RUN_ID', 'RCB_SHARD', 'RCB_TABLE', 'RCB_BUCKET'] as const;

/** Reads and checks the shard's environment; the error names every missing variable. */
export function loadShardEnv(env: NodeJS.ProcessEnv = process.env): ShardEnv {
  const missing = REQUIRED.filter((name) => !env[name]);
  if (missing.length > 0) throw new Error(`rcb container: missing environment variable(s) ${missing.join(', ')}`);
  return {
    runId: env.RCB_RUN_ID as string,
    paper: env.RCB_SHARD as string,
    table: env.RCB_TABLE as string,
    bucket: env.RCB_BUCKET as string,
    scratch: env.RCB_SCRATCH || '/scratch',
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

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const shard = loadShardEnv(env);
  const storage = createStorageAdapters({ ...loadStorageConfig(env), scratchDir: shard.scratch });
  // The run (its test time limit) and its pset, read once before the executor starts.
  const ctx = await loadRunContext(storage, shard.runId);
  const executor = await createLocalExecutor({
    // The local run's executor: the shard's paper is imported once per worker, not per test.
    warm: true,
    python: env.RCB_PYTHON || 'python3',
    jobs: env.RCB_JOBS ? Number(env.RCB_JOBS) : defaultJobs(),
    timeoutSec: ctx.run.spec.timeoutSec,
    unsafeNoSandbox: env.RCB_SANDBOX === 'none',
    tmpDir: shard.scratch,
    // Nothing of this process's environment beyond the executor's own defaults.
    envAllow: [],
    warn: (message) => log('error', message),
  });
  const stop = () => {
    // Spot interruption: verdicts already written stay; the retried shard does the rest.
    log('error', 'SIGTERM: stopping; finished verdicts are kept', { runId: shard.runId, paper: shard.paper });
    void executor.close().finally(() => process.exit(1));
  };
  process.once('SIGTERM', stop);
  try {
    const progress: Progress = { ...silentProgress, note: (message) => log('error', message, { runId: shard.runId, paper: shard.paper }) };
    const result = await evaluateShard({ ...storage, executor, progress }, { runId: shard.runId, paper: shard.paper, pset: ctx.pset });
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
