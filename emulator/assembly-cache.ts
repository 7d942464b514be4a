/**
 * Synthesized cloud assemblies, kept by the content of what a synthesis reads. Synthesizing
 * the stack with its Lambda bundles (esbuild over every function, the image's build context
 * staged) takes tens of seconds; `rcb cloud run --emulate` and `rcb sweep run --emulate` did
 * it on every run. Here a synthesis is keyed by a digest of the checkout's files (every one
 * the stack, the bundles or the image context can read: all but .git, node_modules, build
 * outputs, test/ and docs/), the installed packages (node_modules/.package-lock.json) and the
 * context given (a file it names, such as `rcb:modelsFile`, by path and content); the same
 * key reads the assembly kept under $XDG_CACHE_HOME/rcb/assembly (else ~/.cache/rcb/assembly).
 * A changed source is another key, so a stale assembly is never read.
 *
 * Processes that want the same key at once synthesize it once: the first takes the key's lock
 * file, the others wait for its entry (or take the lock over when its holder is gone). An
 * entry is written whole in a folder of its own and renamed into place. The newest
 * KEPT_ENTRIES entries are kept. Where the cache cannot be written (a read-only home), the
 * stack is synthesized as before, into a temporary folder.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { packageRoot } from '../core/util/package-root';
import { CONTEXT_KEYS } from '../infra/config';
import { synthesizeWorkflow, type SynthesizeOptions, type SynthesizedWorkflow } from './workflow-definition';

/** Folders of the checkout no synthesis reads (at the top level; `.git` and `node_modules` anywhere). */
const SKIPPED_TOP = new Set(['.git', 'node_modules', 'cdk.out', 'dist', 'test', 'docs', 'coverage', 'runs', '.rcb']);
const SKIPPED_ANYWHERE = new Set(['.git', 'node_modules']);
/** Entries kept in the cache (the newest by use); older ones are removed when one is written. */
export const KEPT_ENTRIES = 8;
/** A lock older than this is a dead synthesis's (a synthesis takes well under it even on a loaded machine). */
const STALE_LOCK_MS = 15 * 60_000;
const ENTRY_FILE = 'workflow.json';

/** Where assemblies are kept: $XDG_CACHE_HOME/rcb/assembly, else ~/.cache/rcb/assembly. */
export function defaultAssemblyCache(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'rcb', 'assembly');
}

/** Every file of `root` a synthesis can read, relative and sorted (see SKIPPED_TOP). */
export function synthesisSources(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, top: boolean): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIPPED_ANYWHERE.has(entry.name) || (top && SKIPPED_TOP.has(entry.name))) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path, false);
      else out.push(relative(root, path));
    }
  };
  walk(root, true);
  return out.sort();
}

/** The key of a synthesis of the checkout at `root` with these options. */
export function synthesisKey(opts: Pick<SynthesizeOptions, 'bundle' | 'context'>, root: string = packageRoot()): string {
  const hash = createHash('sha256');
  const add = (label: string, data: string | Buffer): void => {
    hash.update(`${label}\0${Buffer.byteLength(data)}\0`);
    hash.update(data);
  };
  add('bundle', String(opts.bundle ?? false));
  for (const file of synthesisSources(root)) {
    const path = join(root, file);
    const st = lstatSync(path);
    add(`file ${file}`, st.isSymbolicLink() ? `-> ${readlinkSync(path)}` : readFileSync(path));
  }
  const installed = join(root, 'node_modules', '.package-lock.json');
  add('installed', existsSync(installed) ? readFileSync(installed) : 'none');
  const context = opts.context ?? {};
  for (const name of Object.keys(context).sort()) {
    const value = context[name];
    add(`context ${name}`, JSON.stringify(value));
    // A context value naming a file (rcb:modelsFile): the synthesis copies its content.
    if (typeof value === 'string' && value && existsSync(resolve(root, value)) && statSync(resolve(root, value)).isFile()) {
      add(`context file ${name}`, readFileSync(resolve(root, value)));
    }
  }
  return hash.digest('hex');
}

/** What an entry stores: the workflow with its two folders relative to the entry. */
interface StoredWorkflow extends Omit<SynthesizedWorkflow, 'deployment' | 'imageContext'> {
  deployment?: { template: NonNullable<SynthesizedWorkflow['deployment']>['template']; assemblyDir: string };
  imageContext?: { directory: string; digest: string };
}

function stored(workflow: SynthesizedWorkflow, entryDir: string): StoredWorkflow {
  const rel = (p: string): string => relative(entryDir, p);
  return {
    ...workflow,
    ...(workflow.deployment ? { deployment: { ...workflow.deployment, assemblyDir: rel(workflow.deployment.assemblyDir) } } : {}),
    ...(workflow.imageContext ? { imageContext: { ...workflow.imageContext, directory: rel(workflow.imageContext.directory) } } : {}),
  };
}

function loaded(entryDir: string): SynthesizedWorkflow | undefined {
  const file = join(entryDir, ENTRY_FILE);
  if (!existsSync(file)) return undefined;
  const s = JSON.parse(readFileSync(file, 'utf8')) as StoredWorkflow;
  const abs = (p: string): string => (isAbsolute(p) ? p : join(entryDir, p));
  const workflow: SynthesizedWorkflow = {
    ...s,
    ...(s.deployment ? { deployment: { ...s.deployment, assemblyDir: abs(s.deployment.assemblyDir) } } : {}),
    ...(s.imageContext ? { imageContext: { ...s.imageContext, directory: abs(s.imageContext.directory) } } : {}),
  };
  if (workflow.deployment && !existsSync(workflow.deployment.assemblyDir)) return undefined;
  if (workflow.imageContext && !existsSync(workflow.imageContext.directory)) return undefined;
  return workflow;
}

/** The synthesized workflow and whether it was read from the cache. */
export interface CachedWorkflow {
  workflow: SynthesizedWorkflow;
  cached: boolean;
  /** The cache entry's key (undefined when the cache could not be used). */
  key?: string;
}

export interface AssemblyCacheOptions {
  /** @default defaultAssemblyCache() */
  cacheRoot?: string;
  /** The checkout whose files key the synthesis. @default packageRoot() */
  root?: string;
  /** How long to wait for another process's synthesis of the same key before synthesizing alone. @default 15 min */
  waitMs?: number;
}

const lockHolderGone = (lock: string): boolean => {
  try {
    const pid = Number(readFileSync(lock, 'utf8'));
    if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) return true;
    if (!(pid > 0)) return false;
    process.kill(pid, 0);
    return false;
  } catch (e) {
    // ESRCH: no such process; ENOENT: the lock went away meanwhile (its holder finished or failed).
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
};

function takeLock(lock: string): boolean {
  try {
    const fd = openSync(lock, 'wx');
    writeFileSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

/** Removes all but the newest `keep` entries (by the time they were last used) and stale build folders. */
function evict(cacheRoot: string, keep: number): void {
  const entries = readdirSync(cacheRoot, { withFileTypes: true })
    .filter((e) => e.isDirectory() && /^[0-9a-f]{64}$/.test(e.name))
    .map((e) => {
      const dir = join(cacheRoot, e.name);
      const file = join(dir, ENTRY_FILE);
      return { dir, used: existsSync(file) ? statSync(file).mtimeMs : 0 };
    })
    .sort((a, b) => b.used - a.used);
  for (const old of entries.slice(keep)) rmSync(old.dir, { recursive: true, force: true });
  for (const e of readdirSync(cacheRoot, { withFileTypes: true })) {
    const dir = join(cacheRoot, e.name);
    if (e.isDirectory() && e.name.startsWith('.build-') && Date.now() - statSync(dir).mtimeMs > STALE_LOCK_MS) rmSync(dir, { recursive: true, force: true });
  }
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The stack synthesized with `opts` (bundle, context; not outdir), from the cache when the
 * same sources and context were synthesized before, else synthesized now and kept.
 */
export async function cachedWorkflow(opts: Pick<SynthesizeOptions, 'bundle' | 'context'>, cacheOpts: AssemblyCacheOptions = {}): Promise<CachedWorkflow> {
  const cacheRoot = cacheOpts.cacheRoot ?? defaultAssemblyCache();
  let key: string;
  try {
    key = synthesisKey(opts, cacheOpts.root);
    mkdirSync(cacheRoot, { recursive: true });
  } catch {
    return { workflow: await synthesizeWorkflow(opts), cached: false };
  }
  const entryDir = join(cacheRoot, key);
  const lock = join(cacheRoot, `${key}.lock`);
  const deadline = Date.now() + (cacheOpts.waitMs ?? STALE_LOCK_MS);
  for (;;) {
    const hit = loaded(entryDir);
    if (hit) {
      const now = new Date();
      utimesSync(join(entryDir, ENTRY_FILE), now, now);
      return { workflow: hit, cached: true, key };
    }
    let mine: boolean;
    try {
      mine = takeLock(lock);
    } catch {
      return { workflow: await synthesizeWorkflow(opts), cached: false };
    }
    if (mine) break;
    // Another process synthesizes this key: wait for its entry, or for it to be gone.
    if (lockHolderGone(lock)) rmSync(lock, { force: true });
    else if (Date.now() > deadline) return { workflow: await synthesizeWorkflow(opts), cached: false, key };
    else await pause(250);
  }
  try {
    const hit = loaded(entryDir);
    if (hit) return { workflow: hit, cached: true, key };
    const work = mkdtempSync(join(cacheRoot, '.build-'));
    try {
      const workflow = await synthesizeWorkflow({ ...opts, outdir: join(work, 'cdk.out') });
      const entry = stored(workflow, work);
      writeFileSync(join(work, ENTRY_FILE), JSON.stringify(entry));
      // A folder of this key that does not load (removed in part by hand): this lock's holder replaces it.
      rmSync(entryDir, { recursive: true, force: true });
      renameSync(work, entryDir);
      evict(cacheRoot, KEPT_ENTRIES);
      return { workflow: loaded(entryDir)!, cached: false, key };
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  } finally {
    rmSync(lock, { force: true });
  }
}

/**
 * The workflow `emulateCloudRun` synthesizes for its deployed bundles (functions: 'bundles'),
 * from the cache: the same options (bundling on, `rcb:modelsFile` when a models file is given).
 */
export async function emulatorWorkflow(modelsFile?: string): Promise<SynthesizedWorkflow> {
  return (await cachedWorkflow({ bundle: true, context: modelsFile ? { [CONTEXT_KEYS.modelsFile]: modelsFile } : {} })).workflow;
}
