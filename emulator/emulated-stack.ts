/**
 * The emulated cloud's stored side, reopened after `rcb cloud run --emulate` ended: the
 * local servers started over the state folder (emulator-state.ts), the same AWS adapters
 * as a deployed stack's over them, and the executions' records, for `rcb cloud status` and
 * `rcb cloud results` with --emulate.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BlobStore, RunStore } from '../core/store';
import type { EnvironmentChecks, RunCounters } from '../core/cloud/ports';
import type { RunExecutions } from '../core/cloud/execution-attempts';
import { createStorageAdapters } from '../adapters/aws/runtime/cloud-adapters';
import { EmulatorState } from './emulator-state';
import { startLocalAws } from './local-aws';

export interface EmulatedStack {
  store: RunStore;
  counters?: RunCounters;
  environments?: EnvironmentChecks;
  blobs: BlobStore;
  executions: RunExecutions;
  close(): Promise<void>;
}

/** The error of a state folder no emulated run has written. */
export class NoEmulatedStateError extends Error {
  constructor(dir: string) {
    super(`no emulated runs in ${dir}: \`rcb cloud run --emulate\` keeps its runs there (--state-dir to name another folder)`);
    this.name = 'NoEmulatedStateError';
  }
}

export async function openEmulatedStack(stateDir: string): Promise<EmulatedStack> {
  if (!existsSync(join(stateDir, 'dynamodb'))) throw new NoEmulatedStateError(stateDir);
  const state = EmulatorState.open(stateDir);
  try {
    const aws = await startLocalAws({ scratchDir: tmpdir(), keep: { dynamoDir: state.dynamoDir!, s3Dir: state.s3Dir! } });
    const storage = createStorageAdapters(aws.storage, { doc: aws.doc, s3: aws.s3 });
    return {
      store: storage.store,
      counters: storage.counters,
      environments: storage.environments,
      blobs: storage.blobs,
      executions: state,
      async close() {
        await aws.close();
        state.close();
      },
    };
  } catch (err) {
    state.close();
    throw err;
  }
}
