/**
 * A run in the cloud, deployed or emulated: which runs the cloud can rebuild from their spec,
 * the workflow input's batch settings, and the run's inputs uploaded (pset bundle, prompt
 * template, replay files) with the workflow input built from them. `rcb cloud run`, its
 * `--emulate`, `rcb sweep run --cloud|--emulate` and the emulator share these.
 */
import type { ModelInfo, RunSpec } from '../core/records';
import type { Pset } from '../core/types';
import type { BlobStore } from '../core/store';
import { runId as computeRunId } from '../core/ids';
import { uploadPromptTemplate, uploadPsetBundle, uploadReplayFiles } from '../core/cloud/pset-bundle';
import { parsePayload, runWorkflowInputSchema, type BatchSettings, type RunWorkflowInput } from '../core/cloud/payloads';
import type { HostedModels } from '../adapters/models/hosted-models';
import { UsageError } from './local-machine';
import { batchModelIds } from './models';
import type { ResolvedRun } from './resolve-run';

/** The run, refused when a model is one the cloud cannot rebuild from the spec. */
export function refuseUnbuildableModels(resolved: ResolvedRun, hosted: HostedModels): ResolvedRun {
  // The cloud rebuilds model clients from the spec: offline ones by name, replayed ones from
  // the file uploaded with the run, the rest from the deployed registry.
  const unknown = resolved.spec.models.filter(
    (m) =>
      !['oracle', 'empty'].includes(m.id) &&
      typeof resolved.models.info[m.id]?.config.replay !== 'string' &&
      !hosted.resolve(m.id, { temperature: resolved.temperature }),
  );
  if (unknown.length) throw new UsageError(`the cloud runs oracle, empty, replay:FILE and registry models only; not ${unknown.map((m) => m.id).join(', ')}`);
  return resolved;
}

/**
 * The workflow input's batch settings: a sweep's, or with `batch` every registry model of the
 * run (each must have a batch API), refused as `rcb run --batch` refuses them.
 */
export function cloudBatchSettings(
  opts: { batch?: boolean; batchSettings?: BatchSettings },
  hosted: HostedModels,
  run: ResolvedRun,
): BatchSettings | undefined {
  if (opts.batchSettings) return opts.batchSettings;
  if (!opts.batch) return undefined;
  return { models: batchModelIds(run.models, hosted, run.temperature) };
}

/** What a cloud run is started with. */
export interface CloudRunInputs {
  pset: Pset;
  /** The prompt template's text (uploaded beside the pset bundle). */
  templateText: string;
  /** The run spec as a local run builds it; `psetRoot` is replaced by the bundle's key. */
  spec: RunSpec;
  /** Report metadata of each model, by id. */
  models: Record<string, ModelInfo>;
  /** Plan even when the estimate exceeds the budget. */
  force?: boolean;
  /** Models answered by the batch lane. @default none */
  batch?: BatchSettings;
  /** The run's generation deadline, seconds (`rcb cloud run --deadline`). @default the stack's */
  deadlineSec?: number;
}

/** Uploads the run's inputs and returns its id and workflow input (the spec naming the bundle's key). */
export async function uploadRunInputs(blobs: BlobStore, inputs: CloudRunInputs): Promise<{ runId: string; input: RunWorkflowInput }> {
  const psetKey = await uploadPsetBundle(blobs, inputs.pset);
  await uploadPromptTemplate(blobs, inputs.templateText);
  await uploadReplayFiles(blobs, inputs.spec, inputs.models);
  const spec: RunSpec = { ...inputs.spec, psetRoot: psetKey };
  const runId = computeRunId(spec);
  const input = parsePayload(
    runWorkflowInputSchema,
    {
      runId,
      spec,
      models: inputs.models,
      ...(inputs.force ? { force: true } : {}),
      ...(inputs.batch ? { batch: inputs.batch } : {}),
      ...(inputs.deadlineSec !== undefined ? { deadlineSec: inputs.deadlineSec } : {}),
    },
    'run workflow input',
  );
  return { runId, input };
}
