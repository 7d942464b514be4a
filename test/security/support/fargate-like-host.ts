/**
 * A host like a Fargate task, made with bubblewrap run as real root and without a user
 * namespace: the machine's root file system read-only, one writable scratch directory,
 * its own pid namespace (a task's), the host's network, only a container runtime's
 * default capabilities, and a seccomp filter that refuses user namespaces as Fargate does
 * (clone/unshare with CLONE_NEWUSER fail with ENOSPC, clone3 with ENOSYS). bubblewrap
 * cannot start inside it, so rcb has to use the uid sandbox.
 */
import { mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { join } from 'node:path';

/** Docker's and containerd's default capability set: what a task's root has. */
export const CONTAINER_DEFAULT_CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
];

const CLONE_NEWUSER = 0x10000000;
const ENOSPC = 28;
const ENOSYS = 38;
// name: [x86_64, aarch64]
const NR = { clone: [56, 220], unshare: [272, 97], clone3: [435, 435] };
const AUDIT_ARCH: Record<string, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };

/** The BPF program (struct sock_filter[]) bwrap's --seccomp takes. */
export function userNamespaceRefusingFilter(): Buffer {
  const column = arch() === 'arm64' ? 1 : 0;
  const auditArch = AUDIT_ARCH[arch()];
  if (auditArch === undefined) throw new Error(`no Fargate-like filter for ${arch()}`);
  const LD = 0x20,
    JEQ = 0x15,
    JSET = 0x45,
    RET = 0x06;
  const ALLOW = 0x7fff0000,
    ERRNO = 0x00050000;
  const insns: [number, number, number, number][] = [
    [LD, 0, 0, 4], // arch
    [JEQ, 1, 0, auditArch],
    [RET, 0, 0, ALLOW], // another ABI: not what this filter is about
    [LD, 0, 0, 0], // nr
  ];
  for (const call of ['clone', 'unshare'] as const) {
    insns.push([JEQ, 0, 4, NR[call][column]], [LD, 0, 0, 16], [JSET, 0, 1, CLONE_NEWUSER], [RET, 0, 0, ERRNO | ENOSPC], [RET, 0, 0, ALLOW]);
  }
  insns.push([JEQ, 0, 1, NR.clone3[column]], [RET, 0, 0, ERRNO | ENOSYS], [RET, 0, 0, ALLOW]);
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/** The command line that runs `command` on the Fargate-like host; `seccompFd` must be passed as stdio fd 3. */
export function fargateLikeHost(scratch: string, command: readonly string[]): { args: string[]; seccompFd: number } {
  // A file of its own per host (hosts start concurrently), gone once open.
  const dir = mkdtempSync(join(scratch, 'rcb-fargate-bpf-'));
  const filter = join(dir, 'filter.bpf');
  writeFileSync(filter, userNamespaceRefusingFilter());
  const seccompFd = openSync(filter, 'r');
  rmSync(dir, { recursive: true, force: true });
  const args = [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--unshare-pid',
    '--proc',
    '/proc',
    '--bind',
    scratch,
    scratch,
    '--die-with-parent',
    '--cap-drop',
    'ALL',
    ...CONTAINER_DEFAULT_CAPS.flatMap((cap) => ['--cap-add', cap]),
    '--seccomp',
    '3',
    '--setenv',
    'TMPDIR',
    scratch,
    '--',
    ...command,
  ];
  return { args, seccompFd };
}
