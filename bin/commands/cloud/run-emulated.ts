/**
 * `rcb cloud run --emulate`: the cloud flow on this machine (emulator/emulated-run.ts),
 * keeping its table, bucket and executions in the state folder (--state-dir, default
 * ~/.rcb/emulator) for `rcb cloud status|results --emulate`. A run whose latest execution
 * there failed starts its next attempt, resuming from what is stored; one that succeeded
 * prints its stored leaderboard.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HostedModels } from '../../../adapters/models/hosted-models';
import { StateInUseError } from '../../../emulator/emulator-state';
import { exitCodeOf } from '../../../core/cloud/run-progress';
import { cloudReportExtras } from '../../../core/cloud/run-results';
import { LEADERBOARD, RUN_OUTPUTS, writeRunOutputs } from '../../../core/run/run-outputs';
import { cloudBatchSettings } from '../../../app/cloud-run';
import { defaultPython, parsePositiveInt, UsageError } from '../common';
import type { CloudDeps } from '../../../app/deployed-stack';
import type { ShardEvaluatedLog } from '../../../emulator/shard-container';
import { deadlineOf, resolveCloudRun, type CloudRunOptions } from './cloud-run-flags';
import { emulatorStateDir } from './emulated-stack-flags';
import type * as EmulatedRunModule from '../../../emulator/emulated-run';
import type * as AssemblyCacheModule from '../../../emulator/assembly-cache';

export async function emulatedRun(opts: CloudRunOptions, hosted: HostedModels, deps: CloudDeps): Promise<number> {
  // Loaded on use: the emulator brings its local servers and the CDK synthesis.
  const { emulateCloudRun }: typeof EmulatedRunModule = require('../../../emulator/emulated-run');
  const { emulatorWorkflow }: typeof AssemblyCacheModule = require('../../../emulator/assembly-cache');
  const deadline = deadlineOf(opts);
  const resolved = resolveCloudRun(opts, hosted);
  const { pset, template, spec, runId, models } = resolved;
  const batch = cloudBatchSettings(opts, hosted, resolved);
  const stateDir = emulatorStateDir(opts.stateDir);
  const started = Date.now();
  const modelsFile = opts.modelsFile ? resolve(opts.modelsFile) : undefined;
  deps.err(`run ${runId} (emulated): ${pset.papers.length} paper(s), ${spec.models.length} model(s), ${spec.samples} sample(s); state in ${stateDir}\n`);
  const run = await emulateCloudRun(
    { pset, templateText: template.text, spec, models: models.info, force: opts.force, ...(batch ? { batch } : {}), ...deadline },
    {
      stateDir,
      deliverTwice: opts.emulateDeliverTwice,
      failFirstShardOnce: opts.emulateFailShardOnce,
      python: opts.python ?? defaultPython(),
      jobs: opts.jobs ? parsePositiveInt('--jobs', opts.jobs) : undefined,
      unsafeNoSandbox: opts.unsafeNoSandbox,
      // The deployed bundles carry the registry: --models-file is synthesized into them.
      modelsFile,
      // The stack synthesized with its bundles, kept by the sources' digest (emulator/assembly-cache.ts).
      workflow: await emulatorWorkflow(modelsFile),
      onState: (state, result) => deps.err(`${describeState(state, result)}\n`),
    },
  ).catch((e: Error) => {
    throw e instanceof StateInUseError ? new UsageError(e.message) : e;
  });
  try {
    const { execution } = run;
    if (execution.started && execution.earlier.length) {
      deps.err(`execution ${execution.name} (attempt ${execution.attempt}; earlier: ${execution.earlier.join(', ')}) resumed from what is stored\n`);
    }
    if (!execution.started) deps.err(`run ${runId} succeeded before (execution ${execution.name}) and has no failed task to ask again; its stored results:\n`);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const runRecord = await run.store.getRun(run.runId);
    if (run.succeeded) {
      const dir = opts.out ? resolve(opts.out) : undefined;
      if (dir) mkdirSync(dir, { recursive: true });
      const texts = await writeRunOutputs(
        run.store,
        run.runId,
        (output, text) => {
          if (dir) writeFileSync(join(dir, output.file), text);
        },
        dir ? RUN_OUTPUTS : [LEADERBOARD],
        // As Aggregate wrote the bucket's reports: infra_error tasks out and named, infrastructure priced from the run's records.
        runRecord ? await cloudReportExtras(run, runRecord) : {},
      );
      deps.out(`\n${texts.get(LEADERBOARD.file)}`);
    }
    const l = run.lanes;
    const failedShards = run.shardRuns.filter((s) => s.code !== 0).length;
    deps.err(
      `\nrun ${runRecord?.status ?? 'unknown'} (emulated) in ${seconds}s: ${l.sent} message(s) sent, ${l.delivered} delivered, ` +
        `${run.shardRuns.length} container run(s) (${failedShards} failed)` +
        (l.deadLettered.length ? `, ${l.deadLettered.length} dead-lettered` : '') +
        environmentSummary(run.shardRuns) +
        (run.error ? `\nexecution failed: ${run.error.name}: ${run.error.message}` : '') +
        // What the deployed stack puts on the default bus, and its alarm topic receives (docs/cloud.md#run-events).
        run.events.map((e) => `\nevent rcb run ended: ${e.summary}`).join('') +
        '\n',
    );
    deps.err(`${readAgainHint(runId, opts.stateDir)}\n`);
    return exitCodeOf(run.succeeded ? 'SUCCEEDED' : 'FAILED', runRecord?.status);
  } finally {
    await run.close();
  }
}

/** The shards' environment checks: how many ran an oracle, how many the image's stored checks answered, and the papers that cannot run. */
function environmentSummary(shardRuns: Array<{ evaluated?: ShardEvaluatedLog }>): string {
  const checks = shardRuns.flatMap((s) => (s.evaluated?.environment ? [s.evaluated] : []));
  if (!checks.length) return '';
  const ran = checks.filter((c) => c.environment!.ran).length;
  const broken = new Map<string, { reason: string | null; tasks: number }>();
  for (const c of checks) {
    if (c.environment!.runs) continue;
    const b = broken.get(c.environment!.paper) ?? { reason: c.environment!.reason, tasks: 0 };
    b.tasks += c.envBroken;
    broken.set(c.environment!.paper, b);
  }
  return (
    `\nenvironment checks: ${ran} run, ${checks.length - ran} answered by the image's stored checks` +
    [...broken]
      .map(([paper, b]) => `\nenv_broken: ${paper} (${b.reason ?? 'its oracle fails in the image'}): ${b.tasks} task(s) untested, out of the scores`)
      .join('')
  );
}

/** The commands that read the run again, each whole: --state-dir inside both, not after them. */
export function readAgainHint(runId: string, stateDir?: string): string {
  const dir = stateDir ? ` --state-dir ${stateDir}` : '';
  return `read it again with \`rcb cloud status ${runId} --emulate${dir}\` or \`rcb cloud results ${runId} --emulate${dir}\``;
}

/** One line per state the emulated workflow left: PlanRun's counts, as PlanRun returns them (core/cloud/payloads.ts). */
export function describeState(state: string, result: unknown): string {
  const r = (result ?? {}) as Record<string, any>;
  switch (state) {
    case 'PlanRun':
      return `PlanRun: ${r.taskCount} task(s), ${r.enqueued} enqueued, ${r.shardCount} shard(s)`;
    case 'CheckProgress':
      return `CheckProgress: ${r.settled}/${r.total} answered${r.failed ? ` (${r.failed} failed)` : ''}${r.done ? ', generation done' : ''}`;
    case 'Aggregate':
      return `Aggregate: ${r.status}`;
    default:
      return `${state}: ${r.error ? `failed (${r.error})` : 'done'}`;
  }
}
