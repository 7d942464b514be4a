/**
 * Unprivileged users that test processes run as when rcb runs as root. Each worker slot
 * gets its own uid, so that RLIMIT_NPROC (counted per user) of one candidate cannot
 * starve another, a candidate's files are never writable by another's, and what a test
 * left running can be found by its uid.
 */

/**
 * Where sandbox uids come from: each rcb process takes them from a block of its own,
 * derived from its pid. Two live processes never share a pid, so they never share a uid:
 * ending every process of a slot's uid (rcb_contain.py, after each test without a pid
 * namespace) can never reach another rcb's tests, whoever started it. The range,
 * 2^30 up to 2^30 + 2^22 x 128, lies above the ids distributions and directory services
 * hand out and below 2^31, which some tools cannot take.
 */
export const UID_SPACE_START = 1 << 30;
/** Users one process may hold at once (slots of all its executors together). */
export const UIDS_PER_PROCESS = 128;
/** Pids are below the kernel's largest pid_max, 2^22. */
const PID_LIMIT = 1 << 22;

/** Offsets in this process's block that an executor holds now. */
const held = new Set<number>();

export interface SandboxUser {
  uid: number;
  gid: number;
  name: string;
}

/** The first uid of this process's block. */
export function processUidBase(pid: number = process.pid): number {
  if (!Number.isInteger(pid) || pid <= 0 || pid >= PID_LIMIT) throw new Error(`rcb: unexpected pid ${pid}`);
  return UID_SPACE_START + pid * UIDS_PER_PROCESS;
}

/** Hands out `count` users of this process's block that no executor holds (gid equal to uid). */
export function allocateSandboxUsers(count: number): SandboxUser[] {
  const base = processUidBase();
  const offsets: number[] = [];
  for (let offset = 0; offset < UIDS_PER_PROCESS && offsets.length < count; offset++) {
    if (!held.has(offset)) offsets.push(offset);
  }
  if (offsets.length < count) {
    throw new Error(`rcb: one process can run at most ${UIDS_PER_PROCESS} sandbox slots at once (asked for ${count} more, ${held.size} held)`);
  }
  for (const offset of offsets) held.add(offset);
  return offsets.map((offset) => {
    const id = base + offset;
    return { uid: id, gid: id, name: `rcb${id}` };
  });
}

/** Gives users back once nothing of theirs runs any more (the executor is closed). */
export function releaseSandboxUsers(users: readonly SandboxUser[]): void {
  const base = processUidBase();
  for (const u of users) held.delete(u.uid - base);
}

/** Whether test processes must be moved off this process's user (it is root). */
export function runningAsRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * /etc/passwd for the sandbox: the test users with home /tmp. Libraries ask for the
 * current user's entry (getpass.getuser, torch, matplotlib) and fail when it is missing.
 */
export function passwdText(users: readonly SandboxUser[]): string {
  const lines = ['root:x:0:0:root:/root:/usr/sbin/nologin', 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin'];
  for (const u of users) lines.push(`${u.name}:x:${u.uid}:${u.gid}:rcb test:/tmp:/usr/sbin/nologin`);
  return `${lines.join('\n')}\n`;
}

export function groupText(users: readonly SandboxUser[]): string {
  const lines = ['root:x:0:', 'nogroup:x:65534:'];
  for (const u of users) lines.push(`${u.name}:x:${u.gid}:`);
  return `${lines.join('\n')}\n`;
}
