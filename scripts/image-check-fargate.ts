/**
 * What `npm run image:check` needs to run the evaluation image the way Fargate runs it,
 * derived from the synthesized task definition rather than restated: podman's
 * configuration for this host, a seccomp profile that refuses user namespaces as Fargate
 * does, and the `podman run` arguments of one shard task. Pure functions, tested in
 * test/infra/image-check.test.ts; scripts/image-check.ts does the I/O.
 */

/** The part of an ECS container definition (as synthesized) that decides how it runs. */
export interface SynthContainerDefinition {
  User?: string;
  ReadonlyRootFilesystem?: boolean;
  Environment?: Array<{ Name: string; Value: unknown }>;
  MountPoints?: Array<{ ContainerPath: string; SourceVolume: string; ReadOnly?: boolean }>;
  LinuxParameters?: { Capabilities?: { Add?: string[]; Drop?: string[] }; InitProcessEnabled?: boolean };
}

/**
 * The capabilities a container starts with on Fargate (containerd's default, the same as
 * Docker's); the task definition's Drop list is applied to these. Podman's own default is
 * smaller, so image:check sets this one.
 */
export const FARGATE_DEFAULT_CAPABILITIES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FSETID',
  'FOWNER',
  'MKNOD',
  'NET_RAW',
  'SETGID',
  'SETUID',
  'SETFCAP',
  'SETPCAP',
  'NET_BIND_SERVICE',
  'SYS_CHROOT',
  'KILL',
  'AUDIT_WRITE',
] as const;

/**
 * containers.conf for this host: runc (crun fails on its cgroups), cgroupfs, a file events
 * log, explicit ulimits (the defaults ask for more than the host allows), Fargate's
 * default capabilities. Written to a file named by CONTAINERS_CONF, never to the machine's
 * own configuration.
 */
export function containersConf(opts: { nofileHardLimit: number }): string {
  const caps = FARGATE_DEFAULT_CAPABILITIES.map((c) => `"CAP_${c}"`).join(', ');
  return [
    '[containers]',
    `default_capabilities = [${caps}]`,
    `default_ulimits = ["nofile=${opts.nofileHardLimit}:${opts.nofileHardLimit}", "nproc=32768:32768"]`,
    '',
    '[engine]',
    'runtime = "runc"',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    '',
  ].join('\n');
}

/** storage.conf keeping image:check's images and layers in its own directory. */
export function storageConf(opts: { graphRoot: string; runRoot: string }): string {
  return ['[storage]', 'driver = "overlay"', `graphroot = "${opts.graphRoot}"`, `runroot = "${opts.runRoot}"`, ''].join('\n');
}

interface SeccompRule {
  names: string[];
  action: string;
  args?: Array<{ index: number; value: number; valueTwo: number; op: string }>;
  errnoRet?: number;
  [key: string]: unknown;
}
interface SeccompProfile {
  defaultAction: string;
  syscalls: SeccompRule[];
  [key: string]: unknown;
}

const CLONE_NEWUSER = 0x10000000;
const ENOSPC = 28;
const ENOSYS = 38;

/**
 * Podman's default seccomp profile changed to refuse user namespaces the way Fargate does
 * (max_user_namespaces = 0): clone and unshare with CLONE_NEWUSER fail with ENOSPC,
 * everything else they did stays allowed; clone3, whose flags seccomp cannot read, fails
 * with ENOSYS, which makes glibc fall back to clone (Docker's default does the same).
 */
export function userNamespaceRefusingProfile(podmanDefault: SeccompProfile): SeccompProfile {
  const gated = new Set(['clone', 'clone3', 'unshare']);
  const syscalls = podmanDefault.syscalls.map((rule) => ({ ...rule, names: rule.names.filter((n) => !gated.has(n)) })).filter((rule) => rule.names.length > 0);
  const newUser = (valueTwo: number) => [{ index: 0, value: CLONE_NEWUSER, valueTwo, op: 'SCMP_CMP_MASKED_EQ' }];
  syscalls.push(
    { names: ['clone', 'unshare'], action: 'SCMP_ACT_ALLOW', args: newUser(0) },
    { names: ['clone', 'unshare'], action: 'SCMP_ACT_ERRNO', args: newUser(CLONE_NEWUSER), errnoRet: ENOSPC },
    { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
  );
  return { ...podmanDefault, syscalls };
}

export interface ShardRunOptions {
  image: string;
  container: SynthContainerDefinition;
  /** Values for the task definition's variables that are CloudFormation tokens (table, bucket, region). */
  resolved: Record<string, string>;
  /** The workflow's containerOverrides and the local endpoints. */
  extraEnv: Record<string, string>;
  seccompProfilePath: string;
  /** Size of the /scratch tmpfs. @default '4g' */
  scratchSize?: string;
  /** Command instead of the image's CMD (the constraint probe). */
  command?: string[];
}

/**
 * `podman run` arguments of one shard task as the task definition declares it: its user,
 * read-only root (without podman's extra tmpfs mounts, which Fargate does not add), each
 * mount point as a tmpfs holding the image's contents there (as a Fargate volume receives
 * them), its capability drops, its init process, its environment; user namespaces
 * refused; the host network, where the local DynamoDB and S3 listen.
 */
export function shardRunArgs(opts: ShardRunOptions): string[] {
  const c = opts.container;
  const args = ['run', '--rm', '--network=host', '--pull=never'];
  if (c.User) args.push(`--user=${c.User}`);
  if (c.ReadonlyRootFilesystem) args.push('--read-only', '--read-only-tmpfs=false');
  for (const m of c.MountPoints ?? []) {
    if (m.ReadOnly) throw new Error(`image:check: read-only mount point ${m.ContainerPath} is not emulated`);
    args.push(`--tmpfs=${m.ContainerPath}:rw,exec,nosuid,nodev,size=${opts.scratchSize ?? '4g'},tmpcopyup`);
  }
  const caps = c.LinuxParameters?.Capabilities ?? {};
  if (caps.Add?.length) args.push(...caps.Add.map((cap) => `--cap-add=${cap}`));
  if (caps.Drop?.length) args.push(...caps.Drop.map((cap) => `--cap-drop=${cap}`));
  if (c.LinuxParameters?.InitProcessEnabled) args.push('--init');
  args.push(`--security-opt=seccomp=${opts.seccompProfilePath}`);
  const env: Record<string, string> = {};
  for (const { Name, Value } of c.Environment ?? []) {
    if (typeof Value === 'string') env[Name] = Value;
    else if (Name in opts.resolved) env[Name] = opts.resolved[Name];
    else throw new Error(`image:check: no local value for the task definition's variable ${Name} (${JSON.stringify(Value)})`);
  }
  Object.assign(env, opts.extraEnv);
  for (const [name, value] of Object.entries(env)) args.push(`--env=${name}=${value}`);
  args.push(opts.image, ...(opts.command ?? []));
  return args;
}

/** The effective capability names of a /proc/PID/status CapEff hex mask. */
export function capabilityNames(capEffHex: string): string[] {
  // Numbers from linux/capability.h, the ones a container's default set can hold.
  const numbers: Record<number, string> = {
    0: 'CHOWN',
    1: 'DAC_OVERRIDE',
    2: 'DAC_READ_SEARCH',
    3: 'FOWNER',
    4: 'FSETID',
    5: 'KILL',
    6: 'SETGID',
    7: 'SETUID',
    8: 'SETPCAP',
    9: 'LINUX_IMMUTABLE',
    10: 'NET_BIND_SERVICE',
    11: 'NET_BROADCAST',
    12: 'NET_ADMIN',
    13: 'NET_RAW',
    14: 'IPC_LOCK',
    15: 'IPC_OWNER',
    16: 'SYS_MODULE',
    17: 'SYS_RAWIO',
    18: 'SYS_CHROOT',
    19: 'SYS_PTRACE',
    20: 'SYS_PACCT',
    21: 'SYS_ADMIN',
    22: 'SYS_BOOT',
    23: 'SYS_NICE',
    24: 'SYS_RESOURCE',
    25: 'SYS_TIME',
    26: 'SYS_TTY_CONFIG',
    27: 'MKNOD',
    28: 'LEASE',
    29: 'AUDIT_WRITE',
    30: 'AUDIT_CONTROL',
    31: 'SETFCAP',
  };
  const mask = BigInt(`0x${capEffHex.trim()}`);
  const names: string[] = [];
  for (let bit = 0; bit < 64; bit++) {
    if (mask & (1n << BigInt(bit))) names.push(numbers[bit] ?? `CAP_${bit}`);
  }
  return names.sort();
}

/** The first Debian mirror of an apt sources file (deb822 `URIs:` or one-line `deb URL`). */
export function debianMirror(sources: string): string | undefined {
  for (const line of sources.split('\n')) {
    const deb822 = /^URIs:\s*(\S+)/.exec(line.trim());
    const oneLine = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s/.exec(line.trim());
    const url = deb822?.[1] ?? oneLine?.[1];
    if (url && /\/debian\/?$/.test(url)) return url;
  }
  return undefined;
}
