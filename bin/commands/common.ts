/**
 * What several commands share: reading flag values, the report and sandbox flags. Locating
 * the pset, the interpreter and a run directory is app/local-machine.ts (re-exported here for
 * the commands).
 */
import { parseSandboxMode, type SandboxMode } from '../../adapters/executor/executor-options';
import type { Judge } from '../../core/types';
import type { Subset } from '../../core/scoring';
import { REPORT_FORMATS, type ReportFormat } from '../../core/report/format';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DAMAGED_EXIT, openRunDir, UsageError } from '../../app/local-machine';
import { StoreFileError } from '../../adapters/local/sqlite-store';
import { loadRun, type LoadedRun } from '../../core/report/loaded-run';
import { MAX_PARALLEL } from '../../core/limits';

export {
  UsageError,
  DAMAGED_EXIT,
  defaultPsetDir,
  defaultPython,
  cacheDir,
  interpreterPath,
  loadPsetOrFail,
  loadPromptTemplate,
  openRunDir,
  runIdIn,
  writeRunId,
} from '../../app/local-machine';

export function parseList(value: string | undefined, flag = '--papers'): string[] | null {
  if (value === undefined) return null;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  // An empty list given is a mistake (an unset shell variable), not "every paper": that is the flag left out.
  if (!items.length) throw new UsageError(`${flag} "${value}" names nothing; leave ${flag} out to take every paper`);
  return items;
}

/** A whole number in [1, max] (the maxima: core/limits.ts, docs/running-locally.md "Limits"). */
export function parsePositiveInt(name: string, value: string, max = MAX_PARALLEL): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${name} must be a whole number >= 1 (got "${value}")`);
  if (n > max) throw new UsageError(`${name} must be at most ${max} (got "${value}")`);
  return n;
}

/**
 * `--python`'s value, checked before any executor starts so that the error names the flag:
 * a path to an executable file, or a name found on PATH (docs/running-locally.md).
 */
export function pythonFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const problem = interpreterProblem(value);
  if (problem) throw new UsageError(`--python ${value}: ${problem}`);
  return value;
}

function interpreterProblem(path: string): string | undefined {
  if (!path) return 'names nothing; leave --python out for the default interpreter';
  if (!path.includes('/')) {
    const dirs = (process.env.PATH ?? '').split(':').filter(Boolean);
    return dirs.some((d) => isExecutableFile(join(d, path))) ? undefined : 'is not on PATH; give the path of a Python interpreter';
  }
  if (!existsSync(path)) return 'does not exist; give the path of a Python interpreter, or leave --python out for the default';
  return isExecutableFile(path) ? undefined : 'is not an executable file';
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function parseNumber(name: string, value: string, min = 0, max = Number.MAX_VALUE): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) throw new UsageError(`${name} must be a number >= ${min} (got "${value}")`);
  if (n > max) throw new UsageError(`${name} must be at most ${max} (got "${value}")`);
  return n;
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw new UsageError(`${flag} must be one of ${allowed.join(', ')} (got "${value}")`);
  return value as T;
}

/** `--format`, `--judge` and `--subset` of the report commands, checked; no judge means the report's default. */
export function parseReportFlags(opts: { format: string; judge?: string; subset: string }): { format: ReportFormat; judge?: Judge; subset: Subset } {
  return {
    format: oneOf('--format', opts.format, REPORT_FORMATS),
    judge: opts.judge === undefined ? undefined : oneOf<Judge>('--judge', opts.judge, ['strict', 'official']),
    subset: oneOf<Subset>('--subset', opts.subset, ['all', 'safe-common', 'safe-per-model']),
  };
}

/** The sandbox flags of the commands that run tests here (run, doctor). */
export interface SandboxFlags {
  sandbox?: string;
  unsafeNoSandbox?: boolean;
}

/** The sandbox asked for by --sandbox (default $RCB_SANDBOX, else auto) and --unsafe-no-sandbox. */
export function sandboxFromFlags(opts: SandboxFlags): SandboxMode {
  const given = opts.sandbox ?? (process.env.RCB_SANDBOX || 'auto');
  if (opts.unsafeNoSandbox && given !== 'auto' && given !== 'none') {
    throw new UsageError(`--unsafe-no-sandbox and --sandbox ${given} contradict each other`);
  }
  if (opts.unsafeNoSandbox) return 'none';
  try {
    return parseSandboxMode(given, opts.sandbox === undefined ? 'RCB_SANDBOX' : '--sandbox');
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/^rcb: /, ''));
  }
}

/**
 * A run directory read whole (the result commands: show, compare, report, export): no
 * run.json, or a store that holds no run it names, is said naming the folder.
 */
export async function readRunDir(dir: string): Promise<LoadedRun> {
  const { store, runId, dir: abs } = openRunDir(dir, false);
  try {
    if (!runId) throw new UsageError(`${abs} has no run.json (not a run directory, or one whose run never started)`);
    if (!(await store.getRun(runId))) throw new UsageError(`${resolve(abs, 'rcb.sqlite')} holds no run ${runId}, the run its run.json names`, DAMAGED_EXIT);
    return await loadRun(store, runId);
  } finally {
    await store.close();
  }
}

/** An error of a deeper layer as the user sees it: a damaged store stays itself (its own exit code), the rest a UsageError. */
export function asUsageError(e: unknown): Error {
  if (e instanceof StoreFileError || e instanceof UsageError) return e;
  return new UsageError(e instanceof Error ? e.message : String(e));
}
