/**
 * Entry point of the evaluation container (`node dist/container/entry.js`): evaluate one
 * shard, i.e. every candidate of one paper in one run, and write the verdicts.
 *
 * Environment (set by the task definition and by the workflow's containerOverrides):
 *   RCB_RUN_ID   run id                      (override, from the Map item)
 *   RCB_SHARD    paper id of the shard       (override, from the Map item)
 *   RCB_TABLE    DynamoDB run store table    (task definition)
 *   RCB_BUCKET   S3 artifacts bucket         (task definition)
 *   RCB_SCRATCH  the only writable directory (task definition; /scratch)
 *
 * Exit status: 0 when every candidate has a verdict (failing tests are verdicts, not
 * errors); non-zero only when the shard could not be evaluated, which fails the
 * EvaluateShard state (States.TaskFailed) and retries it.
 *
 * Minimal until the runtime issue fills it in with the evaluate use case: it checks its
 * environment and exits non-zero, so a run fails visibly instead of succeeding empty.
 */

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

function log(level: 'info' | 'error', message: string, extra: Record<string, unknown> = {}): void {
  process.stderr.write(`${JSON.stringify({ level, message, ...extra })}\n`);
}

async function main(): Promise<number> {
  const shard = loadShardEnv();
  log('error', 'shard evaluation is not implemented yet', { runId: shard.runId, paper: shard.paper });
  return 3;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      log('error', err instanceof Error ? err.message : String(err));
      process.exit(1);
    },
  );
}
