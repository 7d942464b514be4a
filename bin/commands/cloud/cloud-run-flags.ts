/** The flags of `rcb cloud run` (deployed or `--emulate`), and the run they define. */
import type { BatchSettings } from '../../../core/cloud/payloads';
import type { HostedModels } from '../../../adapters/models/hosted-models';
import { refuseUnbuildableModels } from '../../../app/cloud-run';
import type { LocalRunFlags } from '../local-run-cli';
import { resolveRun, type ResolvedRun, type RunSpecFlags } from '../resolve-run';
import type { StackFlags } from './stack-flags';

export interface CloudRunOptions extends RunSpecFlags, LocalRunFlags, StackFlags {
  modelsFile?: string;
  batch?: boolean;
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

/** The run of the flags, refused when a model is one the cloud cannot rebuild from the spec. */
export function resolveCloudRun(opts: CloudRunOptions, hosted: HostedModels): ResolvedRun {
  return refuseUnbuildableModels(resolveRun(opts, hosted), hosted);
}
