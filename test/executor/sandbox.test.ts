import type { PythonInfo } from '../../adapters/executor/python';
import { interpreterDirs, SANDBOX_RCB_DIR, SANDBOX_WORKSPACE, sandboxArgs, sandboxBaseArgs } from '../../adapters/executor/sandbox';

const debianPython: PythonInfo = {
  executable: '/usr/bin/python3',
  realExecutable: '/usr/bin/python3.11',
  version: '3.11.2',
  prefix: '/usr',
  basePrefix: '/usr',
  execPrefix: '/usr',
  baseExecPrefix: '/usr',
  pathEntries: ['/usr/lib/python3.11', '/usr/lib/python3/dist-packages'],
};

const ALL_OPTIONS = new Set(['--size', '--disable-userns', '--clearenv']);

/** Host paths that bwrap mounts: the first argument after each bind option. */
function boundSources(args: string[]): string[] {
  return args.flatMap((arg, i) => (['--bind', '--ro-bind'].includes(arg) ? [args[i + 1]] : []));
}

describe('interpreterDirs', () => {
  it('binds nothing more for a system python under /usr', () => {
    expect(interpreterDirs(debianPython, '/tmp/rcb-cold-x')).toEqual([]);
  });

  it('binds the outermost directories of a venv and of its base interpreter', () => {
    const venv: PythonInfo = {
      ...debianPython,
      executable: '/opt/venv/bin/python',
      realExecutable: '/opt/pythons/3.11/bin/python3.11',
      prefix: '/opt/venv',
      execPrefix: '/opt/venv',
      basePrefix: '/opt/pythons/3.11',
      baseExecPrefix: '/opt/pythons/3.11',
      pathEntries: ['/opt/pythons/3.11/lib/python3.11', '/opt/venv/lib/python3.11/site-packages', '/srv/extra'],
    };

    expect(interpreterDirs(venv, '/tmp/rcb-cold-x').sort()).toEqual(['/opt/pythons/3.11', '/opt/venv', '/srv/extra']);
  });

  it('refuses directories that would expose the run directory or cover the sandbox mount points', () => {
    const warnings: string[] = [];
    const broad: PythonInfo = { ...debianPython, pathEntries: ['/', '/var', '/var/rcb', '/var/rcb/runs/x', '/proc/self', '/opt/lib'] };

    const dirs = interpreterDirs(broad, '/var/rcb/runs', (m) => void warnings.push(m));

    expect(dirs).toEqual(['/opt/lib']);
    expect(warnings).toHaveLength(5);
  });
});

describe('sandboxArgs', () => {
  const base = (options: ReadonlySet<string>, warn?: (m: string) => void): string[] =>
    sandboxBaseArgs({
      python: debianPython,
      env: { PATH: '/usr/bin', HOME: '/tmp' },
      passwdFile: '/tmp/rcb-cold-x/etc/passwd',
      groupFile: '/tmp/rcb-cold-x/etc/group',
      tmpfsBytes: 64 * 1024 * 1024,
      runDir: '/tmp/rcb-cold-x',
      bwrapOptions: options,
      warn,
    });

  it('isolates namespaces, clears the environment and sets only the given one', () => {
    const args = base(ALL_OPTIONS);

    expect(args).toEqual(expect.arrayContaining(['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--clearenv']));
    expect(args).not.toContain('--share-net');
    expect(args.filter((a) => a === '--setenv')).toHaveLength(2);
  });

  it('mounts the system read-only and never /root, /home, /work or the run directory itself', () => {
    const args = sandboxArgs(base(ALL_OPTIONS), '/tmp/rcb-cold-x/ws/ws-1', '/tmp/rcb-cold-x/driver/rcb_driver.py', 4, ['python3']);

    const sources = boundSources(args);
    expect(sources.filter((s) => /^\/(root|home|work)(\/|$)/.test(s))).toEqual([]);
    expect(sources.filter((s) => s.startsWith('/tmp/rcb-cold-x'))).toEqual([
      '/tmp/rcb-cold-x/etc/passwd',
      '/tmp/rcb-cold-x/etc/group',
      '/tmp/rcb-cold-x/ws/ws-1',
      '/tmp/rcb-cold-x/driver',
    ]);
    const at = (option: string, source: string) => args.findIndex((a, i) => a === option && args[i + 1] === source);
    expect(args[at('--bind', '/tmp/rcb-cold-x/ws/ws-1') + 2]).toBe(SANDBOX_WORKSPACE);
    expect(args[at('--ro-bind', '/tmp/rcb-cold-x/driver') + 2]).toBe(SANDBOX_RCB_DIR);
    expect(args.slice(args.indexOf('--remount-ro'), args.indexOf('--remount-ro') + 2)).toEqual(['--remount-ro', '/']);
    expect(args.indexOf('--remount-ro')).toBeGreaterThan(at('--bind', '/tmp/rcb-cold-x/ws/ws-1'));
    expect(args.slice(args.indexOf('--chdir'), args.indexOf('--chdir') + 2)).toEqual(['--chdir', SANDBOX_WORKSPACE]);
    expect(args.slice(-2)).toEqual(['--', 'python3']);
  });

  it('sizes /tmp and /dev/shm when bwrap can, and warns when it cannot', () => {
    const warnings: string[] = [];

    const sized = base(ALL_OPTIONS);
    const unsized = base(new Set(['--clearenv']), (m) => void warnings.push(m));

    expect(sized.join(' ')).toContain(`--size ${64 * 1024 * 1024} --tmpfs /tmp`);
    expect(unsized).not.toContain('--size');
    expect(unsized).not.toContain('--disable-userns');
    expect(unsized.join(' ')).toContain('--tmpfs /tmp');
    expect(warnings.join('\n')).toMatch(/--size/);
  });
});
