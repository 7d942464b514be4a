/**
 * `rcb cloud run`: start a run in the stack (the next attempt of a run that failed) and
 * follow it to its leaderboard; `--emulate` runs the same flow here (run-emulated.ts). The
 * run spec is built by the code `rcb run` uses, so a cloud run of the same flags has the same id.
 */
import { StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { HostedModels } from '../../../adapters/models/hosted-models';
import { startOrFollow } from '../../../core/cloud/execution-attempts';
import { watchRun } from '../../../core/cloud/watch-run';
import { retryableFailedTasks } from '../../../core/cloud/failed-tasks';
import { cloudBatchSettings, uploadRunInputs } from '../../../app/cloud-run';
import { deadlineOf, resolveCloudRun, type CloudRunOptions } from './cloud-run-flags';
import { findStackOutputs, stackAdapters, stackExecutions, executionArn, type CloudDeps } from '../../../app/deployed-stack';
import { cloudDoctor, defaultDoctorDeps, type DoctorDeps } from './doctor';

/** Flags of `rcb run` that only this machine's evaluation reads. */
const LOCAL_ONLY_FLAGS: Array<[keyof CloudRunOptions, string]> = [
  ['jobs', '--jobs'],
  ['python', '--python'],
  ['unsafeNoSandbox', '--unsafe-no-sandbox'],
  ['stateDir', '--state-dir'],
];

/**
 * `rcb cloud doctor` before the run starts (docs/cloud.md "Check the account before a
 * sweep"): a run that does not fit is refused with the doctor's lines, unless --skip-doctor.
 * Returns whether the run may start.
 */
export async function doctorAllows(opts: CloudRunOptions & { sweepFile?: string }, deps: Pick<CloudDeps, 'err'>, doctor: () => DoctorDeps): Promise<boolean> {
  if (opts.skipDoctor) {
    deps.err("note: --skip-doctor: the account's quotas were not checked\n");
    return true;
  }
  let text = '';
  let code: number;
  try {
    code = await cloudDoctor({ ...opts, ...(opts.sweepFile ? { sweep: opts.sweepFile } : {}) }, { ...doctor(), out: (t) => (text += t) });
  } catch (e) {
    text += `the doctor could not check the account: ${(e as Error).message}\n`;
    code = 1;
  }
  deps.err(text.replace(/^/gm, 'doctor: ').replace(/doctor: $/, ''));
  if (code !== 0) deps.err('refused: the run does not fit the account (above); raise the quotas named, or start it anyway with --skip-doctor\n');
  return code === 0;
}

export async function cloudRun(
  opts: CloudRunOptions & { sweepFile?: string },
  hosted: HostedModels,
  deps: CloudDeps,
  doctor: () => DoctorDeps = () => defaultDoctorDeps(opts.region),
): Promise<number> {
  if (!(await doctorAllows(opts, deps, doctor))) return 1;
  const ignored = LOCAL_ONLY_FLAGS.filter(([k]) => opts[k] !== undefined && opts[k] !== false).map(([, flag]) => flag);
  if (opts.modelsFile) ignored.push('--models-file (the deployed registry prices and routes)');
  if (ignored.length) deps.err(`note: ignored in the cloud: ${ignored.join(', ')}\n`);

  const deadline = deadlineOf(opts);
  const resolved = resolveCloudRun(opts, hosted);
  const { pset, template, spec, models } = resolved;
  const batch = cloudBatchSettings(opts, hosted, resolved);
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { blobs, store, counters } = stackAdapters(deps, outputs);
  const { runId, input } = await uploadRunInputs(blobs, {
    pset,
    templateText: template.text,
    spec,
    models: models.info,
    force: opts.force,
    batch,
    ...deadline,
  });
  const executions = stackExecutions(
    deps,
    outputs,
    (name) => new StartExecutionCommand({ stateMachineArn: outputs.stateMachineArn, name, input: JSON.stringify(input) }),
  );
  // A succeeded run whose failed tasks a new attempt would ask again is started again, as `rcb run` resumes one.
  const attempt = await startOrFollow(executions, runId, { restartSucceeded: async () => (await retryableFailedTasks(store, runId)).length > 0 });
  if (attempt.started) {
    const again = attempt.earlier.length ? ` again (attempt ${attempt.attempt}; earlier: ${attempt.earlier.join(', ')}), resuming from what is stored` : '';
    deps.err(
      `run ${runId} started${again}: ${pset.papers.length} paper(s), ${spec.models.length} model(s), ${spec.samples} sample(s)\nexecution ${executionArn(outputs.stateMachineArn, attempt.name)}\n`,
    );
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
