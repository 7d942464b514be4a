/**
 * Entry point of the evaluation container (`node dist/container/entry.js`): evaluate one
 * shard, i.e. every answered task of one paper in one run, with the same executor as local
 * runs, and write the verdicts (run store) and the shard's verdicts with logs (bucket).
 * The stage (its environment, the adapters it is built from, the use case) is
 * app/stages/evaluate-shard.ts, as the Lambda handlers' stages are in app/stages/; this file
 * runs it, stops on SIGTERM and sets the exit status. The environment it reads is listed there.
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
import { evaluateShardOf, loadShardEnv, shardDeps, type ShardLog } from '../app/stages/evaluate-shard';
import type { createStorageAdapters } from '../adapters/aws/runtime/cloud-adapters';

export { loadShardEnv, parseSandbox, type ShardEnv } from '../app/stages/evaluate-shard';

/** Variables that carry the task role's credentials; named so tests can check none reaches a test process. */
export const CREDENTIAL_VARIABLES = [
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const;

const log: ShardLog = (level, message, extra = {}) => {
  process.stderr.write(`${JSON.stringify({ level, message, ...extra })}\n`);
};

/**
 * Evaluates the shard the environment names. `clients` replaces the AWS SDK clients built
 * from the environment (a test records every call they make against the task role).
 */
export async function main(env: NodeJS.ProcessEnv = process.env, clients: Parameters<typeof createStorageAdapters>[1] = {}): Promise<number> {
  const shard = loadShardEnv(env);
  const deps = await shardDeps(shard, env, log, clients);
  const stop = () => {
    // Spot interruption: verdicts already written stay; the retried shard does the rest.
    log('error', 'SIGTERM: stopping; finished verdicts are kept', { runId: shard.runId, paper: shard.paper });
    void deps.executor.close().finally(() => process.exit(1));
  };
  process.once('SIGTERM', stop);
  try {
    const result = await evaluateShardOf(shard, deps);
    log('info', 'shard evaluated', { ...result });
    return 0;
  } finally {
    process.off('SIGTERM', stop);
    await deps.executor.close();
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
