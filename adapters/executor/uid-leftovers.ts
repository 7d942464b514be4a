/**
 * What a slot user left outside its workspace and home in the uid sandbox. Without a mount
 * namespace the host's file systems are the test's; a slot uid is fresh (no file of its own,
 * gid equal to its uid, no supplementary groups), so the only places it can create a file are
 * folders whose "other" bits allow it (write and search) and that it can reach (every folder
 * above them searchable by others), and the folders it makes there itself. rcb finds the
 * first kind once, over every writable mount (`findWritableDirs`), and after each test takes
 * what the uid owns in them and below (`takeFilesOfUid`): those files are reported as
 * tampering (the strict judge fails them) and removed, so the next test starts clean
 * (docs/security.md, "What the uid sandbox finds outside the workspace").
 */
import { execFile } from 'node:child_process';
import { closeSync, constants, fchmodSync, fchownSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';

/** Where any user may create files on a usual Linux host: searched even when the walk found less. */
export const SHARED_WRITABLE_DIRS = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', '/run/shm', '/dev/mqueue'];

/**
 * File systems a test cannot leave a file in (kernel views; devpts entries go with the
 * terminal that made them), or whose walk means nothing.
 */
const VIRTUAL_FS = new Set([
  'proc',
  'sysfs',
  'cgroup',
  'cgroup2',
  'devpts',
  'securityfs',
  'debugfs',
  'tracefs',
  'pstore',
  'bpf',
  'configfs',
  'fusectl',
  'binfmt_misc',
  'autofs',
  'nsfs',
  'efivarfs',
  'selinuxfs',
]);

/** How long the walk for writable folders may take before rcb warns and goes on with what it found. */
export const WRITABLE_WALK_BUDGET_MS = 60_000;
/** Entries one scan after a test may look at before it warns (a test that made millions of folders). */
const SCAN_ENTRY_LIMIT = 500_000;

const OTHER_WRITE = 0o002;
const OTHER_SEARCH = 0o001;

const within = (path: string, dir: string): boolean => path === dir || path.startsWith(dir === sep ? dir : dir + sep);

export interface Mount {
  path: string;
  fsType: string;
  readOnly: boolean;
}

/** The mounts of this process's namespace (/proc/self/mountinfo), each once. */
export function readMounts(text: string = readFileSync('/proc/self/mountinfo', 'utf8')): Mount[] {
  const byPath = new Map<string, Mount>();
  for (const line of text.split('\n')) {
    const [head, tail] = line.split(' - ');
    if (!head || !tail) continue;
    const fields = head.split(' ');
    const path = (fields[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
    const [fsType = '', , superOptions = ''] = tail.split(' ');
    const readOnly = (fields[5] ?? '').split(',').includes('ro') || superOptions.split(',').includes('ro');
    // A later line for the same point is the mount on top, which is what a path reaches.
    if (path) byPath.set(path, { path, fsType, readOnly });
  }
  return [...byPath.values()];
}

/** Whether every folder above `path` is searchable by others (a fresh uid can reach it). */
function reachable(path: string): boolean {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    try {
      if (!(statSync(dir).mode & OTHER_SEARCH)) return false;
    } catch {
      return false;
    }
    if (dir === sep || dir === '.') return true;
  }
}

export interface WritableDirs {
  /** Folders a fresh uid can create files in, outermost first. */
  dirs: string[];
  /** False when the walk ran out of time (then `dirs` holds what it found and SHARED_WRITABLE_DIRS). */
  complete: boolean;
  /** How long it took. */
  ms: number;
}

export interface WritableWalkOptions {
  /** @default the mounts of /proc/self/mountinfo */
  mounts?: Mount[];
  /** Folders not to walk (rcb's own run directories). */
  skip?: readonly string[];
  /** @default WRITABLE_WALK_BUDGET_MS */
  budgetMs?: number;
  /** The `find` executable (GNU or busybox); null walks in this process instead. @default 'find' */
  find?: string | null;
}

/**
 * Walks every writable, non-virtual mount (each on its own device: a nested mount is its own
 * walk) for folders a fresh uid can create files in, descending only where others may search.
 * `find` does it in a child process (68,000 folders: 2.6 s here, where this process took 12 s
 * and would hold its event loop); without one, this process walks.
 */
export async function findWritableDirs(options: WritableWalkOptions = {}): Promise<WritableDirs> {
  const started = Date.now();
  const deadline = started + (options.budgetMs ?? WRITABLE_WALK_BUDGET_MS);
  const skip = options.skip ?? [];
  const found = new Set<string>();
  let complete = true;
  const mounts = (options.mounts ?? readMounts()).filter((m) => !m.readOnly && !VIRTUAL_FS.has(m.fsType));
  for (const mount of mounts) {
    let root;
    try {
      root = lstatSync(mount.path);
    } catch {
      continue;
    }
    if (!root.isDirectory() || !(root.mode & OTHER_SEARCH) || (mount.path !== sep && !reachable(mount.path))) continue;
    const left = deadline - Date.now();
    const walk = options.find === null ? walkHere(mount.path, root.dev, skip, left) : await walkWithFind(options.find ?? 'find', mount.path, left);
    for (const dir of walk.dirs) if (!skip.some((s) => within(dir, s))) found.add(dir);
    complete &&= walk.complete;
  }
  for (const dir of SHARED_WRITABLE_DIRS) if (!complete) found.add(dir);
  const dirs = [...found].sort((a, b) => a.length - b.length || a.localeCompare(b));
  return { dirs, complete, ms: Date.now() - started };
}

type Walk = { dirs: string[]; complete: boolean };

/** `find` over one mount: prune folders others cannot search, print those they can write and search. */
function walkWithFind(find: string, mount: string, budgetMs: number): Promise<Walk> {
  const args = [mount, '-xdev', '(', '-type', 'd', '!', '-perm', '-0001', '-prune', ')', '-o', '(', '-type', 'd', '-perm', '-0003', '-print0', ')'];
  return new Promise((resolvePromise) => {
    execFile(
      find,
      args,
      {
        encoding: 'buffer',
        maxBuffer: 256 * 1024 * 1024,
        timeout: Math.max(1, budgetMs),
        killSignal: 'SIGKILL',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
      },
      (error, stdout) => {
        const dirs = stdout.toString('utf8').split('\0').filter(Boolean);
        // find exits 1 when some folder could not be read (gone meanwhile): what it printed holds.
        const timedOut = (error as { killed?: boolean } | null)?.killed === true;
        if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') return resolvePromise(walkHere(mount, lstatSync(mount).dev, [], budgetMs));
        resolvePromise({ dirs, complete: !timedOut });
      },
    );
  });
}

/** The same walk in this process (no `find` on the host). */
function walkHere(mount: string, dev: number, skip: readonly string[], budgetMs: number): Walk {
  const deadline = Date.now() + budgetMs;
  const dirs: string[] = [];
  if (lstatSync(mount).mode & OTHER_WRITE) dirs.push(mount);
  const stack = [mount];
  while (stack.length) {
    if (Date.now() > deadline) return { dirs, complete: false };
    for (const sub of searchableSubdirs(stack.pop()!, dev, skip)) {
      if (sub.writable) dirs.push(sub.path);
      stack.push(sub.path);
    }
  }
  return { dirs, complete: true };
}

/** The folders in `dir`, on device `dev`, that others may search; whether others may also write them. */
function searchableSubdirs(dir: string, dev: number, skip: readonly string[]): Array<{ path: string; writable: boolean }> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const out: Array<{ path: string; writable: boolean }> = [];
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const path = join(dir, entry.name);
    if (skip.some((s) => within(path, s))) continue;
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      continue;
    }
    if (stat.dev !== dev || !(stat.mode & OTHER_SEARCH)) continue;
    out.push({ path, writable: (stat.mode & OTHER_WRITE) !== 0 });
  }
  return out;
}

/**
 * Removes and returns the paths owned by `uid` in `roots` and in the world-writable folders
 * below them (at any depth), leaving out anything under `skip`. A folder of the uid's is
 * taken whole: first made root's and closed to others through a descriptor (O_NOFOLLOW), so
 * another slot's test still running cannot swap a link into it while it is removed.
 *
 * The search is synchronous: it runs after every test, and on a machine whose /tmp holds
 * thousands of entries the same walk through the thread pool took 100-200 ms a test
 * (15-25 ms this way, during which the event loop waits).
 */
export async function takeFilesOfUid(
  uid: number,
  skip: readonly string[],
  roots: readonly string[] = SHARED_WRITABLE_DIRS,
  warn?: (message: string) => void,
): Promise<string[]> {
  const found: string[] = [];
  const visited = new Set<string>();
  let entries = 0;
  const visit = (dir: string): void => {
    if (visited.has(dir) || entries > SCAN_ENTRY_LIMIT) return;
    visited.add(dir);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    entries += names.length;
    for (const name of names) {
      const path = join(dir, name);
      if (skip.some((s) => within(path, s) || within(s, path))) continue;
      let stat;
      try {
        stat = lstatSync(path);
      } catch {
        continue; // gone meanwhile
      }
      if (stat.uid === uid) found.push(path);
      else if (stat.isDirectory() && stat.mode & OTHER_WRITE && stat.mode & OTHER_SEARCH) visit(path);
    }
  };
  for (const root of roots) if (!skip.some((s) => within(root, s))) visit(root);
  if (entries > SCAN_ENTRY_LIMIT) warn?.(`rcb: the uid sandbox's scan after a test stopped after ${SCAN_ENTRY_LIMIT} entries of writable folders`);
  // A root below a folder taken whole is in it: report the folder once.
  const taken = found.filter((path) => !found.some((other) => other !== path && within(path, other)));
  for (const path of taken) {
    closeFolder(path, uid);
    await rm(path, { recursive: true, force: true });
  }
  return taken;
}

/** Makes a folder of `uid`'s root's with mode 700, through a descriptor that follows no link. */
function closeFolder(path: string, uid: number): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    return; // not a folder (a file, link, pipe or socket is unlinked as it is)
  }
  try {
    if (fstatSync(fd).uid !== uid) return;
    fchownSync(fd, 0, 0);
    fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
}

/** How long one walk's folders stand for the executors a process makes. */
export const WRITABLE_DIRS_REUSE_MS = 5 * 60_000;
let lastWalk: { at: number; walk: Promise<WritableDirs> } | null = null;

/**
 * The writable folders for an executor of the uid sandbox: one walk per process, reused for
 * WRITABLE_DIRS_REUSE_MS (a test file making several executors walks once). Warns when the
 * walk ran out of time. What a slot uid makes is found below these folders whenever it is
 * made; only a folder another user makes world-writable inside a closed one meanwhile waits
 * for the next walk.
 */
export function writableDirsForSandbox(warn: (message: string) => void, now: number = Date.now()): Promise<WritableDirs> {
  if (!lastWalk || now - lastWalk.at > WRITABLE_DIRS_REUSE_MS) {
    const walk = findWritableDirs().then((found) => {
      if (!found.complete) {
        warn(
          `rcb: the uid sandbox's search for writable folders stopped after ${Math.round(found.ms / 1000)} s; ` +
            `files a test leaves below folders it did not reach are not found (searched: ${found.dirs.length} folders)`,
        );
      }
      return found;
    });
    lastWalk = { at: now, walk };
  }
  return lastWalk.walk;
}
