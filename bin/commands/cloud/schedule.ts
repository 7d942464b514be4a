/**
 * `rcb cloud schedule add NAME --cron EXPR [run flags] | list | remove NAME`: runs started by
 * EventBridge Scheduler with the workflow input `rcb cloud run` builds of the same flags, so
 * each firing starts the same run id, with its budget (docs/cloud.md#schedules).
 */
import type { HostedModels } from '../../../adapters/models/hosted-models';
import { cloudBatchSettings, uploadRunInputs } from '../../../app/cloud-run';
import { findStackOutputs, stackAdapters, type CloudDeps } from '../../../app/deployed-stack';
import { DISCARDING_BLOBS, deployedRunScheduler, emulatedRunScheduler } from '../../../app/run-schedules';
import { ScheduleInputError, checkCron, checkScheduleName, scheduleLine, type RunScheduler } from '../../../core/cloud/run-schedules';
import type { BlobStore } from '../../../core/store';
import { UsageError } from '../common';
import { deadlineOf, resolveCloudRun, type CloudRunOptions } from './cloud-run-flags';
import { emulatorStateDir, type EmulateFlags } from './emulated-stack-flags';
import type { StackFlags } from './stack-flags';

export interface ScheduleAddOptions extends CloudRunOptions {
  cron: string;
  /** IANA time zone of the expression. @default UTC */
  timezone?: string;
}

/** The schedules (and, deployed, the bucket a new schedule's run inputs go to). */
async function schedulesOf(opts: StackFlags & EmulateFlags, deps: CloudDeps): Promise<{ scheduler: RunScheduler; blobs: BlobStore }> {
  if (opts.emulate) return { scheduler: emulatedRunScheduler(emulatorStateDir(opts.stateDir)), blobs: DISCARDING_BLOBS };
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  return { scheduler: await deployedRunScheduler(deps.cfn, opts.stackName, outputs, opts.region), blobs: stackAdapters(deps, outputs).blobs };
}

const asUsage = <T>(fn: () => T): T => {
  try {
    return fn();
  } catch (e) {
    throw e instanceof ScheduleInputError ? new UsageError(e.message) : e;
  }
};

export async function scheduleAdd(name: string, opts: ScheduleAddOptions, hosted: HostedModels, deps: CloudDeps): Promise<number> {
  const cron = asUsage(() => (checkScheduleName(name), checkCron(opts.cron)));
  const resolved = resolveCloudRun(opts, hosted);
  const batch = cloudBatchSettings(opts, hosted, resolved);
  const { scheduler, blobs } = await schedulesOf(opts, deps);
  // The run's inputs uploaded and its workflow input built as `rcb cloud run` does: same run id.
  const { runId, input } = await uploadRunInputs(blobs, {
    pset: resolved.pset,
    templateText: resolved.template.text,
    spec: resolved.spec,
    models: resolved.models.info,
    force: opts.force,
    batch,
    ...deadlineOf(opts),
  });
  const schedule = { name, cron, timezone: opts.timezone ?? 'UTC', state: 'ENABLED', input };
  await scheduler.create(schedule).catch((e: Error) => {
    throw e instanceof ScheduleInputError ? new UsageError(e.message) : e;
  });
  deps.out(`${scheduleLine(schedule)}\n`);
  deps.err(`each firing starts run ${runId}; follow it with \`rcb cloud status ${runId}\`, hear of its end on the run events (docs/cloud.md#run-events)\n`);
  return 0;
}

export async function scheduleList(opts: StackFlags & EmulateFlags, deps: CloudDeps): Promise<number> {
  const { scheduler } = await schedulesOf(opts, deps);
  for (const s of await scheduler.list()) deps.out(`${scheduleLine(s)}\n`);
  return 0;
}

export async function scheduleRemove(name: string, opts: StackFlags & EmulateFlags, deps: CloudDeps): Promise<number> {
  const { scheduler } = await schedulesOf(opts, deps);
  if (!(await scheduler.remove(name))) throw new UsageError(`no schedule named ${name}`);
  deps.err(`removed schedule ${name}\n`);
  return 0;
}
