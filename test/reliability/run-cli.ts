/**
 * The rcb command line as a child process that does not block the test's event loop (a
 * fake model endpoint in the test process must keep answering while a run is going).
 */
import type { ChildProcess } from 'node:child_process';
import { rcbAsync, type CliResult } from '../helpers/cli';

export interface RunningCli {
  child: ChildProcess;
  /** Settles when the process has exited, with its status (null when killed by a signal). */
  done: Promise<CliResult & { signal: NodeJS.Signals | null }>;
}

export function startRcb(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): RunningCli {
  const child = rcbAsync(args, opts);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => (stderr += d));
  const done = new Promise<CliResult & { signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })),
  );
  return { child, done };
}

/** Run `items` through `fn`, at most `limit` at a time, results in order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
