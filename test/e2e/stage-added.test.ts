/**
 * A cloud stage is one entry of the stage table (issue 35): a stage that exists only in this
 * file, added to a table beside the shipped ones (CLOUD_STAGES stays a const map), is created
 * as a function of the synthesized stack, placed as a Task state after Aggregate with its
 * failures caught, alarmed on like every stage, and run by the emulator through its own
 * local dependency builder; everything derives from its entry. The steps are those of
 * CONTRIBUTING.md "Add a cloud stage".
 */
import { readFileSync } from 'node:fs';
import { Template } from 'aws-cdk-lib/assertions';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { CLOUD_STAGES, type CloudStage, type StageTable } from '../../app/stages';
import { loadStorageConfig, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, type StageHandler, type StageTelemetry } from '../../adapters/aws/runtime/stage-lifecycle';
import { parsePayload } from '../../core/cloud/payloads';
import type { BlobStore, RunStore } from '../../core/store';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { resourcePath } from '../../core/util/package-root';
import { emulateCloudRun } from '../../emulator/emulated-run';
import { definitionFromTemplate, type CfnTemplate } from '../../emulator/workflow-definition';
import { PSET_MINI } from '../helpers/cli';
import { resourcesOfType, unsynthesizedStack } from '../infra/helpers';
import { z } from 'zod';

/** The stage's input: what an `after-aggregate` Task state is given. */
const notifyInputSchema = z.object({ runId: z.string().min(1), execution: z.string().min(1) });

interface NotifyDeps extends StageTelemetry {
  store: RunStore;
  blobs: BlobStore;
}

/** Where the stage writes its note of a finished run. */
const noteKey = (runId: string): string => `runs/${runId}/notify.json`;

/** The whole stage: after scoring, a note of the run's final status and summary in the bucket. */
const notifyStage = {
  trigger: { state: 'Notify', placement: 'after-aggregate' },
  function: { construct: 'orchestrator', id: 'NotifyFunction', dir: 'notify', description: 'rcb: notes a scored run', entry: __filename },
  loadConfig: (env = process.env) => ({ storage: loadStorageConfig(env) }),
  deployedDeps: (config) => {
    const { logger, metrics, tracer } = lambdaTelemetry('notify');
    const { store, blobs } = createStorageAdapters(config.storage, { tracer });
    return { store, blobs, logger, metrics, tracer };
  },
  localDeps: (parts) => ({ store: parts.storage.store, blobs: parts.storage.blobs, ...parts.telemetry('notify') }),
  createHandler: (getDeps): StageHandler<unknown, { noted: string }> =>
    stageHandler({ failure: 'notify failed' }, getDeps, async (event: unknown, deps) => {
      const input = parsePayload(notifyInputSchema, event, 'Notify input');
      const run = await deps.store.getRun(input.runId);
      await deps.blobs.put(noteKey(input.runId), JSON.stringify({ status: run?.status, execution: input.execution }));
      deps.metrics?.addMetric('RunsNoted', MetricUnit.Count, 1);
      return { noted: input.runId };
    }),
  monitoring: { name: 'notify' },
} satisfies CloudStage<{ storage: StorageConfig }, NotifyDeps>;

const STAGES: StageTable = { ...CLOUD_STAGES, notify: notifyStage };

/** The Lambda functions of a template by logical id, with their Powertools service name. */
function serviceOf(template: Template, service: string): string[] {
  return Object.entries(resourcesOfType(template, 'AWS::Lambda::Function'))
    .filter(([, fn]) => fn.Properties?.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === service)
    .map(([id]) => id);
}

function definitionOf(template: Template): { States: Record<string, Record<string, any>> } {
  return definitionFromTemplate(template.toJSON() as CfnTemplate);
}

describe('a cloud stage added in one file', () => {
  const template = Template.fromStack(unsynthesizedStack({ stages: STAGES }));
  const shipped = Template.fromStack(unsynthesizedStack());

  it('is a function of the synthesized stack, under the construct id its entry names, and only there', () => {
    expect(serviceOf(template, 'rcb-notify')).toEqual([expect.stringMatching(/^OrchestratorNotifyFunction[0-9A-F]{8}$/)]);
    expect(serviceOf(shipped, 'rcb-notify')).toEqual([]);
    // The shipped stages keep their functions (and their logical ids).
    expect(Object.keys(resourcesOfType(template, 'AWS::Lambda::Function'))).toEqual(
      expect.arrayContaining(Object.keys(resourcesOfType(shipped, 'AWS::Lambda::Function'))),
    );
  });

  it('is a Task state after Aggregate, given the run and the execution, whose failure goes to MarkRunFailed', () => {
    const { States } = definitionOf(template);
    expect(States.Aggregate.Next).toBe('Notify');
    expect(States.Notify).toMatchObject({ Type: 'Task', Next: 'RunSucceeded', Catch: [expect.objectContaining({ Next: 'MarkRunFailed' })] });
    expect(JSON.stringify(States.Notify)).toContain('emulated-OrchestratorNotifyFunction');
    expect(States.Notify.Parameters).toEqual({ 'runId.$': '$.runId', 'execution.$': '$$.Execution.Name' });
    expect(definitionOf(shipped).States.Aggregate.Next).toBe('RunSucceeded');
  });

  it('is alarmed on, as every stage is: its errors and its throttles', () => {
    const alarms = Object.values(resourcesOfType(template, 'AWS::CloudWatch::Alarm'));
    const [fnId] = serviceOf(template, 'rcb-notify');
    const onIt = alarms.filter((a) => JSON.stringify(a.Properties).includes(`"Ref":"${fnId}"`));
    expect(onIt.map((a) => a.Properties?.AlarmName)).toEqual([expect.stringMatching(/fn-notify/), expect.stringMatching(/fn-notify/)]);
    expect(alarms.length - Object.keys(resourcesOfType(shipped, 'AWS::CloudWatch::Alarm')).length).toBe(2);
  });

  it('is run by the emulator after the run is scored, with its own local dependencies', async () => {
    const pset = loadPset(PSET_MINI);
    const templatePath = resourcePath('prompt-template.txt');
    const run = await emulateCloudRun(
      {
        pset,
        templateText: readFileSync(templatePath, 'utf8'),
        spec: {
          psetDigest: pset.digest,
          psetRoot: pset.root,
          models: [{ id: 'empty', params: {} }],
          samples: 1,
          withPaper: true,
          papers: null,
          promptTemplateDigest: loadTemplate(templatePath).digest,
          timeoutSec: 60,
          budgetUsd: null,
        },
        models: { empty: { config: { name: 'empty', offline: true } } },
      },
      { python: '/usr/bin/python3', functions: 'source', stages: STAGES },
    );
    try {
      expect([run.succeeded, run.error]).toEqual([true, undefined]);
      expect(run.history.entered.Notify).toBe(1);
      // Aggregate had set the final status when the stage read the run.
      expect(JSON.parse((await run.blobs.get(noteKey(run.runId)))!.toString())).toEqual({ status: 'succeeded', execution: run.execution.name });
    } finally {
      await run.close();
    }
  }, 600_000);
});
