/**
 * `rcb cloud run`: start a run in the stack (the next attempt of a run that failed) and
 * follow it to its leaderboard; `--emulate` runs the same flow here (run-emulated.ts). The
 * run spec is built by the code `rcb run` uses, so a cloud run of the same flags has the same id.
 */
import { StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { HostedModels } from '../../../adapters/models/hosted-models';
import { uploadPsetBundle, uploadPromptTemplate, uploadReplayFiles } from '../../../core/cloud/pset-bundle';
import { parsePayload, runWorkflowInputSchema } from '../../../core/cloud/payloads';
import { startOrFollow } from '../../../core/cloud/execution-attempts';
import { watchRun } from '../../../core/cloud/watch-run';
import { retryableFailedTasks } from '../../../core/cloud/failed-tasks';
import { batchModelIds, resolveRun } from '../resolve-run';
import type { BatchSettings } from '../../../core/cloud/payloads';
import { UsageError } from '../common';
import type { RunOptions } from '../run-command';
import { findStackOutputs, stackAdapters, stackExecutions, executionArn, type CloudDeps } from './cloud-deps';
import type { StackFlags } from './stack-flags';

export interface CloudRunOptions extends RunOptions, StackFlags {
  detach?: boolean;
  force?: boolean;
  emulate?: boolean;
  /** Folder of the emulated cloud's state (--emulate). @default ~/.rcb/emulator */
  stateDir?: string;
  emulateDeliverTwice?: boolean;
  emulateFailShardOnce?: boolean;
  /** Models for the workflow's batch lane, as a sweep's mode batch names them (`--batch` takes every registry model). */
  batchSettings?: BatchSettings;
}

/** Flags of `rcb run` that only this machine's evaluation reads. */
const LOCAL_ONLY_FLAGS: Array<[keyof CloudRunOptions, string]> = [
  ['jobs', '--jobs'],
  ['python', '--python'],
  ['unsafeNoSandbox', '--unsafe-no-sandbox'],
  ['stateDir', '--state-dir'],
];

/** The run of the flags, refused when a model is one the cloud cannot rebuild from the spec. */
export function resolveCloudRun(opts: CloudRunOptions, hosted: HostedModels) {
  const resolved = resolveRun(opts, hosted);
  // The cloud rebuilds model clients from the spec: offline ones by name, replayed ones from
  // the file uploaded with the run, the rest from the deployed registry.
  const unknown = resolved.spec.models.filter(
    (m) => !['oracle', 'empty'].includes(m.id) && typeof resolved.models.info[m.id]?.config.replay !== 'string' && !hosted.resolve(m.id, { temperature: resolved.temperature }),
  );
  if (unknown.length) throw new UsageError(`the cloud runs oracle, empty, replay:FILE and registry models only; not ${unknown.map((m) => m.id).join(', ')}`);
  return resolved;
}

/**
 * The workflow input's batch settings: a sweep's, or with `--batch` every registry model of
 * the run (each must have a batch API), refused as `rcb run --batch` refuses them.
 */
export function cloudBatchSettings(opts: CloudRunOptions, hosted: HostedModels, run: ReturnType<typeof resolveCloudRun>): BatchSettings | undefined {
  if (opts.batchSettings) return opts.batchSettings;
  if (!opts.batch) return undefined;
  return { models: batchModelIds(run, hosted) };
}

export async function cloudRun(opts: CloudRunOptions, hosted: HostedModels, deps: CloudDeps): Promise<number> {
  if (opts.emulate) {
    const { emulatedRun } = await import('./run-emulated');
    return emulatedRun(opts, hosted, deps);
  }
  const ignored = LOCAL_ONLY_FLAGS.filter(([k]) => opts[k] !== undefined && opts[k] !== false).map(([, flag]) => flag);
  if (opts.modelsFile) ignored.push('--models-file (the deployed registry prices and routes)');
  if (ignored.length) deps.err(`note: ignored in the cloud: ${ignored.join(', ')}\n`);

  const resolved = resolveCloudRun(opts, hosted);
  const { pset, template, spec, runId, models } = resolved;
  const batch = cloudBatchSettings(opts, hosted, resolved);
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { blobs, store, counters } = stackAdapters(deps, outputs);
  const psetKey = await uploadPsetBundle(blobs, pset);
  await uploadPromptTemplate(blobs, template.text);
  await uploadReplayFiles(blobs, spec, models.info);
  const input = parsePayload(
    runWorkflowInputSchema,
    { runId, spec: { ...spec, psetRoot: psetKey }, models: models.info, ...(opts.force ? { force: true } : {}), ...(batch ? { batch } : {}) },
    'run workflow input',
  );
  const executions = stackExecutions(deps, outputs, (name) => new StartExecutionCommand({ stateMachineArn: outputs.stateMachineArn, name, input: JSON.stringify(input) }));
  // A succeeded run whose failed tasks a new attempt would ask again is started again, as `rcb run` resumes one.
  const attempt = await startOrFollow(executions, runId, { restartSucceeded: async () => (await retryableFailedTasks(store, runId)).length > 0 });
  if (attempt.started) {
    const again = attempt.earlier.length ? ` again (attempt ${attempt.attempt}; earlier: ${attempt.earlier.join(', ')}), resuming from what is stored` : '';
    deps.err(`run ${runId} started${again}: ${pset.papers.length} paper(s), ${spec.models.length} model(s), ${spec.samples} sample(s)\nexecution ${executionArn(outputs.stateMachineArn, attempt.name)}\n`);
  } else {
    deps.err(`run ${runId} was started before (execution ${attempt.name}); watching it\n`);
  }
  if (opts.detach) {
    deps.out(`${runId}\n`);
    deps.err(`watch it with \`rcb cloud status ${runId}\`; read it with \`rcb cloud results ${runId}\`\n`);
    return 0;
  }
  return watchRun({ executions, store, counters, blobs, note: deps.err, print: deps.out, sleep: deps.sleep, pollMs: deps.pollMs }, runId, attempt.name);
}
