/**
 * The EvaluateShard state's ECS task, emulated: the image's command run as a child process
 * in the image's /app as container-app.ts lays it out (nothing of the checkout), with the
 * environment the task definition and the workflow's containerOverrides give it, pointed
 * at the emulator's servers. A non-zero exit becomes the error a `.sync`
 * RunTask raises for a stopped task (States.TaskFailed), which the definition's Retry
 * matches. Asynchronous: the servers live in this process and must keep answering.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ContainerApp } from './container-app';

/** Error name of a `.sync` ECS task that stopped with a non-zero exit code. */
export const TASK_FAILED = 'States.TaskFailed';

export class ShardTaskFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = TASK_FAILED;
  }
}

/** The rendered RunTask parameters a local handler of an ECS state receives (the parts read here). */
export interface RunTaskParameters {
  /** The task definition (revision) the state names: the run's pinned one. */
  TaskDefinition?: string;
  Overrides: { ContainerOverrides: Array<{ Environment?: Array<{ Name: string; Value: string }> }> };
}

export function containerOverrideEnv(parameters: RunTaskParameters): Record<string, string> {
  const [override] = parameters.Overrides?.ContainerOverrides ?? [];
  if (!override) throw new Error('RunTask parameters carry no container override');
  return Object.fromEntries((override.Environment ?? []).map((e) => [e.Name, e.Value]));
}

export interface ShardRunOutcome {
  runId: string;
  paper: string;
  /** Working directory and node arguments the container was started with (the image's /app and CMD). */
  cwd: string;
  command: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The fault injector stopped it. */
  injected: boolean;
  stderr: string;
  /** What the container logged of its shard (its `shard evaluated` line), when it got that far. */
  evaluated?: ShardEvaluatedLog;
  /** The shard as RCB_SHARD_REF carried it (paper, model, slice as JSON). */
  shardRef?: string;
  /** The task definition revision RunTask named. */
  taskDefinition?: string;
  /** When the container process was spawned and when it exited (epoch ms). */
  startedAt: number;
  endedAt: number;
}

/** The parts of the container's `shard evaluated` log line (container/entry.ts) the emulator reports. */
export interface ShardEvaluatedLog {
  judged: number;
  envBroken: number;
  /** The paper's environment check: its result, and whether this container ran it (false: the image's stored check). */
  environment?: { paper: string; runs: boolean; reason: string | null; ran: boolean };
}

/** The container's `shard evaluated` line, parsed from its stderr (JSON lines). */
export function shardEvaluatedLog(stderr: string): ShardEvaluatedLog | undefined {
  for (const line of stderr.split('\n').reverse()) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as { message?: string } & ShardEvaluatedLog;
      if (entry.message === 'shard evaluated')
        return { judged: entry.judged, envBroken: entry.envBroken, ...(entry.environment ? { environment: entry.environment } : {}) };
    } catch {
      // Not a log line of ours.
    }
  }
  return undefined;
}

export interface ShardContainerOptions {
  /** The image's /app and its command (container-app.ts): each container run starts there. */
  app: ContainerApp;
  /** Environment of the task definition (storage, endpoints, python, jobs, sandbox). */
  baseEnv: Record<string, string>;
  /**
   * Folder under which each container run gets its own RCB_SCRATCH, as each Fargate task
   * has its own /scratch (shards sharing one would race to unpack the pset bundle), removed
   * when the run ends.
   */
  scratchRoot: string;
  /** Stop the first container run with SIGTERM (a Spot interruption), once. @default false */
  failFirstRunOnce?: boolean;
  /** Stop every container run of the shards this accepts with SIGTERM (the paper, and the shard as RCB_SHARD_REF JSON). @default none */
  failShard?: (paper: string, shardRef?: string) => boolean;
  /** Called when a container run ends. */
  onExit?: (outcome: ShardRunOutcome) => void;
  /** Refuses a RunTask of a task definition ECS would not start (throws). @default every one starts */
  checkTaskDefinition?: (arn: string) => void;
}

/** A local handler for the EvaluateShard / EvaluateShardOnDemand states; `settled()` waits for every container run started. */
export function shardContainerHandler(
  options: ShardContainerOptions,
): ((parameters: RunTaskParameters) => Promise<Record<string, never>>) & { settled(): Promise<void> } {
  let faultPending = !!options.failFirstRunOnce;
  const running = new Set<Promise<unknown>>();
  const handler = async (parameters: RunTaskParameters): Promise<Record<string, never>> => {
    const overrides = containerOverrideEnv(parameters);
    if (parameters.TaskDefinition) options.checkTaskDefinition?.(parameters.TaskDefinition);
    const inject = faultPending || !!options.failShard?.(overrides.RCB_SHARD ?? '', overrides.RCB_SHARD_REF);
    faultPending = false;
    const scratch = mkdtempSync(join(options.scratchRoot, 'task-'));
    // Test users (when this runs as root) must traverse it, as the image's user owns /scratch.
    chmodSync(scratch, 0o755);
    const run = runContainer(options.app, { ...options.baseEnv, RCB_SCRATCH: scratch, ...overrides }, inject);
    running.add(run);
    const outcome = {
      ...(await run.finally(() => {
        running.delete(run);
        // A stopped task's storage goes with it, as a Fargate task's /scratch does; removed
        // in the background (settled() waits for it), not left for the end of the run.
        const removal = rm(scratch, { recursive: true, force: true }).catch(() => undefined);
        running.add(removal);
        void removal.finally(() => running.delete(removal));
      })),
      ...(overrides.RCB_SHARD_REF ? { shardRef: overrides.RCB_SHARD_REF } : {}),
      ...(parameters.TaskDefinition ? { taskDefinition: parameters.TaskDefinition } : {}),
    };
    options.onExit?.(outcome);
    if (outcome.code !== 0) {
      const how = outcome.signal ? `signal ${outcome.signal}` : `exit code ${outcome.code}`;
      const tail = outcome.stderr.trim().split('\n').slice(-3).join(' | ');
      throw new ShardTaskFailedError(
        `shard ${outcome.paper} of run ${outcome.runId}: container stopped with ${how}${outcome.injected ? ' (injected fault)' : ''}: ${tail}`,
      );
    }
    return {};
  };
  return Object.assign(handler, {
    settled: async (): Promise<void> => {
      while (running.size) await Promise.allSettled([...running]);
    },
  });
}

function runContainer(app: ContainerApp, env: Record<string, string>, inject: boolean): Promise<ShardRunOutcome> {
  return new Promise((resolve, reject) => {
    const startedAt = Date.now();
    // The image's WORKDIR and CMD; this process's node flags (ts-jest, tsx) are not passed on.
    const child = spawn(process.execPath, app.command, {
      cwd: app.appDir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'production', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.length > 64_000) stderr = stderr.slice(-32_000);
    });
    // Interrupted as soon as it runs: whatever the shard had started is redone by the retry.
    if (inject) child.once('spawn', () => child.kill('SIGTERM'));
    child.once('error', reject);
    child.once('close', (code, signal) =>
      resolve({
        runId: env.RCB_RUN_ID ?? '',
        paper: env.RCB_SHARD ?? '',
        cwd: app.appDir,
        command: app.command,
        code,
        signal,
        injected: inject,
        stderr,
        evaluated: shardEvaluatedLog(stderr),
        startedAt,
        endedAt: Date.now(),
      }),
    );
  });
}
