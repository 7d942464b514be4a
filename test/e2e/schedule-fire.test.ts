/**
 * A schedule fired in the emulator: its stored target input (emulator/emulated-schedules.ts),
 * started as Scheduler's target starts it, runs the run id `rcb cloud run` gives the same flags,
 * with its budget, and ends with its run event. (Apart from schedule-commands.test.ts, whose
 * SDK mocks would answer the emulator's own S3 and DynamoDB calls.)
 */
import { emulatedRunScheduler } from '../../app/run-schedules';
import { resolveCloudRun } from '../../bin/commands/cloud/cloud-run-flags';
import { scheduleAdd } from '../../bin/commands/cloud/schedule';
import { emulateCloudRun } from '../../emulator/emulated-run';
import { consoleOutput, type CloudDeps } from '../../app/deployed-stack';
import { HostedModels } from '../../adapters/models/hosted-models';
import { loadRegistry } from '../../adapters/models/registry';
import { envKeySource } from '../../core/keys';
import { tempDir } from '../helpers/cli';

const hosted = () => new HostedModels(loadRegistry(), envKeySource({}));
const FLAGS = {
  model: ['oracle'],
  papers: 'grouprms',
  samples: '1',
  paper: true,
  timeout: '60',
  concurrency: '16',
  executor: 'warm',
  stackName: 'Rcb',
  budget: '12',
};
const deps = (): CloudDeps => ({ ...consoleOutput(), out: () => undefined, err: () => undefined, pollMs: 0 }) as unknown as CloudDeps;

describe('a schedule fired in the emulator', () => {
  it('starts the workflow with its stored input: the run id rcb cloud run gives the same flags, and the run succeeds', async () => {
    // Prepare: the schedule of one paper's oracle run, and the run `rcb cloud run` builds of the flags.
    const stateDir = tempDir('rcb-schedule-fire-');
    const flags = FLAGS;
    await scheduleAdd('nightly', { ...flags, cron: '0 2 ? * * *', emulate: true, stateDir }, hosted(), deps());
    const [stored] = await emulatedRunScheduler(stateDir).list();
    const resolved = resolveCloudRun(flags, hosted());

    // Act: what Scheduler's target does, here: start the execution with the stored input.
    const run = await emulateCloudRun(
      { pset: resolved.pset, templateText: resolved.template.text, spec: resolved.spec, models: resolved.models.info, startInput: stored.input },
      { functions: 'source', python: '/usr/bin/python3' },
    );
    try {
      // Assess
      expect([run.succeeded, run.error, run.runId, run.input]).toEqual([true, undefined, stored.input.runId, stored.input]);
      expect((await run.store.getRun(run.runId))?.spec.budgetUsd).toBe(12);
      expect(run.events.map((e) => [e.runId, e.status])).toEqual([[stored.input.runId, 'succeeded']]);
    } finally {
      await run.close();
    }
  }, 600_000);
});
