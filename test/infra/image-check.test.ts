/**
 * How `npm run image:check` runs the evaluation image (scripts/image-check-fargate.ts): the
 * podman arguments come from the synthesized task definition, so a change there changes
 * what the check runs; the seccomp profile refuses user namespaces as Fargate does. (The
 * check itself needs podman and minutes; it is not part of npm test.)
 */
import { existsSync, readFileSync } from 'node:fs';
import {
  capabilityNames,
  containersConf,
  debianMirror,
  FARGATE_DEFAULT_CAPABILITIES,
  shardRunArgs,
  userNamespaceRefusingProfile,
  type SynthContainerDefinition,
} from '../../scripts/image-check-fargate';
import { resourcesOfType, sharedStack } from './helpers';

function evaluator(): SynthContainerDefinition {
  const [task] = Object.values(resourcesOfType(sharedStack().template, 'AWS::ECS::TaskDefinition'));
  return (task.Properties?.ContainerDefinitions as SynthContainerDefinition[] | undefined)?.[0] as SynthContainerDefinition;
}

const resolved = { RCB_TABLE: 'rcb-runs', RCB_BUCKET: 'rcb-artifacts', AWS_REGION: 'us-east-1' };

describe('image:check shard container', () => {
  it("runs as the task definition says: its user, read-only root without extra tmpfs, /scratch with the image's contents, its drops, its init", () => {
    const args = shardRunArgs({ image: 'img', container: evaluator(), resolved, extraEnv: { RCB_SHARD: 'p' }, seccompProfilePath: '/x.json' });
    expect(args).toEqual(expect.arrayContaining(['--user=0:0', '--read-only', '--read-only-tmpfs=false', '--init', '--security-opt=seccomp=/x.json']));
    expect(args.filter((a) => a.startsWith('--tmpfs='))).toEqual([expect.stringMatching(/^--tmpfs=\/scratch:rw,exec,.*tmpcopyup$/)]);
    const dropped = args.filter((a) => a.startsWith('--cap-drop=')).map((a) => a.slice('--cap-drop='.length));
    expect(FARGATE_DEFAULT_CAPABILITIES.filter((c) => !dropped.includes(c)).sort()).toEqual(['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID']);
    expect(args.some((a) => a.startsWith('--cap-add'))).toBe(false);
    expect(args.at(-1)).toBe('img');
  });

  it("passes the task definition's environment, its tokens resolved to the local servers, then the overrides", () => {
    const args = shardRunArgs({
      image: 'img',
      container: evaluator(),
      resolved,
      extraEnv: { RCB_SHARD: 'p', RCB_SANDBOX: 'none' },
      seccompProfilePath: '/x.json',
    });
    const env = args.filter((a) => a.startsWith('--env=')).map((a) => a.slice('--env='.length));
    expect(env).toEqual(
      expect.arrayContaining(['RCB_TABLE=rcb-runs', 'RCB_BUCKET=rcb-artifacts', 'RCB_PYTHON=/opt/venv/bin/python3', 'RCB_SCRATCH=/scratch', 'RCB_SHARD=p']),
    );
    // The parameter wins over the task definition's uid, and appears once.
    expect(env.filter((e) => e.startsWith('RCB_SANDBOX='))).toEqual(['RCB_SANDBOX=none']);
  });

  it('refuses a task definition variable it has no local value for, naming it', () => {
    const container = { ...evaluator(), Environment: [{ Name: 'RCB_NEW', Value: { Ref: 'Something' } }] };
    expect(() => shardRunArgs({ image: 'img', container, resolved, extraEnv: {}, seccompProfilePath: '/x.json' })).toThrow(/RCB_NEW/);
  });
});

describe('image:check seccomp profile', () => {
  const podmanDefault = existsSync('/usr/share/containers/seccomp.json')
    ? JSON.parse(readFileSync('/usr/share/containers/seccomp.json', 'utf8'))
    : { defaultAction: 'SCMP_ACT_ERRNO', syscalls: [{ names: ['read', 'clone', 'clone3', 'unshare', 'setns'], action: 'SCMP_ACT_ALLOW', args: [] }] };

  it('fails clone and unshare with CLONE_NEWUSER with ENOSPC, allows them otherwise, and fails clone3 with ENOSYS', () => {
    const profile = userNamespaceRefusingProfile(podmanDefault);
    const rulesFor = (name: string) => profile.syscalls.filter((r) => r.names.includes(name));
    for (const name of ['clone', 'unshare']) {
      expect(rulesFor(name)).toEqual([
        { names: ['clone', 'unshare'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: 0x10000000, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }] },
        {
          names: ['clone', 'unshare'],
          action: 'SCMP_ACT_ERRNO',
          errnoRet: 28,
          args: [{ index: 0, value: 0x10000000, valueTwo: 0x10000000, op: 'SCMP_CMP_MASKED_EQ' }],
        },
      ]);
    }
    expect(rulesFor('clone3')).toEqual([{ names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: 38 }]);
    // Everything else of podman's default is kept.
    expect(rulesFor('read')).toHaveLength(podmanDefault.syscalls.filter((r: { names: string[] }) => r.names.includes('read')).length);
    expect(profile.defaultAction).toBe(podmanDefault.defaultAction);
  });
});

describe('image:check helpers', () => {
  it('names the capabilities of a CapEff mask', () => {
    expect(capabilityNames('00000000000000eb')).toEqual(['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID']);
    expect(capabilityNames('0000000000000000')).toEqual([]);
  });

  it('finds the Debian mirror of a deb822 or a one-line sources file, skipping other repositories', () => {
    expect(debianMirror('Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n')).toBe('http://deb.debian.org/debian');
    expect(debianMirror('deb [signed-by=/k.gpg] https://example.org/apt stable main\ndeb http://mirror.example/debian bookworm main\n')).toBe(
      'http://mirror.example/debian',
    );
    expect(debianMirror('URIs: https://example.org/node_20.x\n')).toBeUndefined();
  });

  it('configures podman for this host without touching its own configuration: runc, cgroupfs, file events, explicit ulimits', () => {
    const conf = containersConf({ nofileHardLimit: 20000 });
    expect(conf).toContain('runtime = "runc"');
    expect(conf).toContain('cgroup_manager = "cgroupfs"');
    expect(conf).toContain('events_logger = "file"');
    expect(conf).toContain('default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]');
    expect(conf).toContain('"CAP_SETUID"');
  });
});
