/**
 * `--emulate` on the commands that read a run (status, results): the emulated cloud's state
 * folder opened through the emulator, its adapters handed to the same use cases as a
 * deployed stack's; errors of the folder (none written, in use) are usage errors.
 */
import { UsageError } from '../common';
import { emulatorStateDir } from './run-emulated';

export interface EmulateFlags {
  emulate?: boolean;
  stateDir?: string;
}

type EmulatedStack = import('../../../emulator/emulated-stack').EmulatedStack;

/** Runs `fn` on the emulated stack of the state folder the flags name, and closes it. */
export async function withEmulatedStack<T>(flags: EmulateFlags, fn: (stack: EmulatedStack, where: string) => Promise<T>): Promise<T> {
  const { openEmulatedStack, NoEmulatedStateError } = await import('../../../emulator/emulated-stack');
  const { StateInUseError } = await import('../../../emulator/emulator-state');
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
