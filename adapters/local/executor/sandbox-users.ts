/**
 * Unprivileged users that test processes run as when rcb runs as root. Each worker slot
 * gets its own uid, so that RLIMIT_NPROC (counted per user) of one candidate cannot
 * starve another, and a candidate's files are never writable by another's.
 */

/** Default first uid/gid handed out; far above the ids a distribution assigns. */
export const DEFAULT_UID_BASE = 200_000;

/** Ids already handed out in this process, per base, so two executors never share one. */
const nextOffset = new Map<number, number>();

export interface SandboxUser {
  uid: number;
  gid: number;
  name: string;
}

/** Hands out `count` fresh users starting at `base` (gid equal to uid). */
export function allocateSandboxUsers(count: number, base: number = DEFAULT_UID_BASE): SandboxUser[] {
  const first = nextOffset.get(base) ?? 0;
  nextOffset.set(base, first + count);
  return Array.from({ length: count }, (_, i) => {
    const id = base + first + i;
    return { uid: id, gid: id, name: `rcb${id}` };
  });
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
  return lines.join('\n') + '\n';
}

export function groupText(users: readonly SandboxUser[]): string {
  const lines = ['root:x:0:', 'nogroup:x:65534:'];
  for (const u of users) lines.push(`${u.name}:x:${u.gid}:`);
  return lines.join('\n') + '\n';
}
