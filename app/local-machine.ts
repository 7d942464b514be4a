/**
 * This machine as a run sees it: the bundled pset, the interpreter, rcb's cache folder, a pset
 * or prompt template read or refused with every problem, a run directory; and UsageError, the
 * error a user can act on (printed without a stack trace).
 */
import { InputError } from '../core/input-error';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { homedir } from 'node:os';
import type { Pset } from '../core/types';
import { formatProblem, readPset } from '../core/pset/read-pset';
import { unknownName } from '../core/util/did-you-mean';
import { packageRoot, resourcePath } from '../core/util/package-root';
import { DEFAULT_TEMPLATE, isShippedTemplate, loadTemplate, SHIPPED_TEMPLATES, type PromptTemplate } from '../core/prompt/template';
import { SqliteRunStore } from '../adapters/local/sqlite-store';
import { installedEnvPython } from '../adapters/local/paper-env/location';

/**
 * The exit code of a command that met a damaged run directory: a store file that is not an
 * rcb store, damaged pages, an unreadable run.json (sysexits' EX_DATAERR).
 */
export const DAMAGED_EXIT = 65;

/** An error the user can act on: printed without a stack trace. */
export class UsageError extends InputError {
  constructor(message: string, exitCode = 1) {
    super(message, exitCode);
    this.name = 'UsageError';
  }
}

export function defaultPsetDir(): string {
  return join(packageRoot(), 'examples', 'pset-mini');
}

/**
 * `--python`, else RCB_PYTHON, else the environment of `rcb env install` where one is
 * installed, else Debian's interpreter where it exists, else python3 on PATH.
 */
export function defaultPython(): string {
  return process.env.RCB_PYTHON || installedEnvPython() || (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
}

/** rcb's cache folder on this machine: paid answers, environment checks. */
export function cacheDir(): string {
  return process.env.RCB_CACHE_DIR || join(homedir(), '.cache', 'rcb');
}

/**
 * The interpreter as the environment cache knows it: an absolute path, symlinks kept (a
 * virtualenv's python links to its base interpreter but has other packages).
 */
export function interpreterPath(python: string): string {
  if (python.includes('/')) return resolve(python);
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir || '.', python);
    if (existsSync(candidate)) return resolve(candidate);
  }
  return python;
}

/**
 * The pset at `dir` (default the bundled one), only `papers` if given. A paper asked for that
 * the pset does not list is the asker's mistake: blamed on `papersSource` (the flag or file
 * that named it), with the nearest ids, not on the pset's papers.yaml.
 */
export function loadPsetOrFail(dir: string | undefined, papers?: string[] | null, papersSource = '--papers'): Pset {
  const root = resolve(dir ?? defaultPsetDir());
  if (!existsSync(root)) throw new UsageError(`the pset folder ${root} does not exist (--pset names a folder holding papers.yaml)`);
  const { pset, problems } = readPset(root, { papers: papers ?? null });
  const unknown = problems.filter((p) => p.unknownPaper !== undefined);
  if (unknown.length) {
    throw new UsageError(
      unknown.map((p) => unknownName(papersSource, 'paper', p.unknownPaper!.id, p.unknownPaper!.known, `in the pset at ${root}`)).join('\n'),
    );
  }
  if (problems.length) {
    throw new UsageError(
      `${problems.map(formatProblem).join('\n')}\n${problems.length} problem(s) in the pset at ${root}; run \`rcb validate --pset ${root}\``,
    );
  }
  return pset;
}

/**
 * `--prompt-template NAME|FILE`: a shipped template by name (`original`, the default, or
 * `rcb`), else a template file. A file that shares a shipped name is reached as `./NAME`.
 */
export function loadPromptTemplate(nameOrFile: string | undefined): PromptTemplate {
  const name = nameOrFile ?? DEFAULT_TEMPLATE;
  const path = isShippedTemplate(name) ? resourcePath(SHIPPED_TEMPLATES[name]) : resolve(name);
  if (!existsSync(path)) {
    throw new UsageError(`prompt template ${path} does not exist (--prompt-template takes ${Object.keys(SHIPPED_TEMPLATES).join(', ')} or a file)`);
  }
  try {
    return loadTemplate(path);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

const STORE_FILE = 'rcb.sqlite';
const RUN_FILE = 'run.json';

/**
 * A run directory: the SQLite store and run.json naming the run it holds. Without `create` the
 * store is opened read-only: reading commands (report, show, rejudge, export, runs) write nothing.
 */
export function openRunDir(dir: string, create: boolean): { store: SqliteRunStore; runId: string | null; dir: string } {
  const abs = resolve(dir);
  if (!create && !existsSync(join(abs, STORE_FILE))) throw new UsageError(`${abs} is not a run directory (no ${STORE_FILE})`);
  if (create) mkdirSync(abs, { recursive: true });
  return { store: new SqliteRunStore(join(abs, STORE_FILE), { readOnly: !create }), runId: runIdIn(abs), dir: abs };
}

/** The run a directory holds (its run.json), or null; creates nothing. */
export function runIdIn(dir: string): string | null {
  const runFile = join(resolve(dir), RUN_FILE);
  if (!existsSync(runFile)) return null;
  let runId: unknown;
  try {
    runId = (JSON.parse(readFileSync(runFile, 'utf8')) as { runId?: unknown } | null)?.runId;
  } catch {
    runId = undefined;
  }
  if (typeof runId !== 'string' || !runId)
    throw new UsageError(`${runFile}: not the run.json rcb writes ({"runId": "..."}); the run directory is damaged`, DAMAGED_EXIT);
  return runId;
}

export function writeRunId(dir: string, runId: string): void {
  writeFileSync(join(dir, RUN_FILE), `${JSON.stringify({ runId }, null, 2)}\n`);
}
