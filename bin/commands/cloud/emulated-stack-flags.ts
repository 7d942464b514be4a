/**
 * `--emulate` on the commands that read a run (status, results): the emulated cloud's state
 * folder opened through the emulator, its adapters handed to the same use cases as a
 * deployed stack's; errors of the folder (none written, in use) are usage errors.
 */
import { resolve } from 'node:path';
import { defaultStateDir } from '../../../emulator/emulator-state';
import { UsageError } from '../common';
import type * as EmulatorStateModule from '../../../emulator/emulator-state';
import type * as EmulatedStackModule from '../../../emulator/emulated-stack';

/** The state folder of --state-dir, else the default one. */
export function emulatorStateDir(flag: string | undefined): string {
  return flag ? resolve(flag) : defaultStateDir();
}

export interface EmulateFlags {
  emulate?: boolean;
  stateDir?: string;
}

type EmulatedStack = import('../../../emulator/emulated-stack').EmulatedStack;

/** Runs `fn` on the emulated stack of the state folder the flags name, and closes it. */
export async function withEmulatedStack<T>(flags: EmulateFlags, fn: (stack: EmulatedStack, where: string) => Promise<T>): Promise<T> {
  const { openEmulatedStack, NoEmulatedStateError }: typeof EmulatedStackModule = require('../../../emulator/emulated-stack');
  const { StateInUseError }: typeof EmulatorStateModule = require('../../../emulator/emulator-state');
  const dir = emulatorStateDir(flags.stateDir);
  const stack = await openEmulatedStack(dir).catch((e: Error) => {
    throw e instanceof NoEmulatedStateError || e instanceof StateInUseError ? new UsageError(e.message) : e;
  });
  try {
    return await fn(stack, `the emulated cloud (${dir})`);
  } finally {
    await stack.close();
  }
}
