/**
 * The uid sandbox's own guarantees, through both executors (as root): the test runs as a
 * slot uid with no supplementary groups, under no_new_privs and the seccomp filter; HOME
 * and TMPDIR are a slot home emptied after each test; files it leaves in the host's shared
 * directories are reported as tampering and removed; rcb's own processes (which hold the
 * credentials and write the verdicts) are unreadable to it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ColdExecutor, WarmExecutor } from '../../adapters/executor';
import { createLocalExecutor } from '../../adapters/executor';
import { allocateSandboxUsers, releaseSandboxUsers, runningAsRoot } from '../../adapters/executor/sandbox-users';
import { takeFilesOfUid } from '../../adapters/executor/uid-leftovers';
import { CORRECT_BODY, makeTinyPaper, modelSource, processesWith, type TinyPaper } from '../fixtures/executor/tiny-paper';

jest.setTimeout(120_000);

const PROBE = (rcbPid: number, leftover: string) => `
import os, socket
status = open("/proc/self/status").read()
field = lambda name: [l.split(":", 1)[1].strip() for l in status.splitlines() if l.startswith(name + ":")][0]
print("UID=%d GROUPS=%r NNP=%s SECCOMP=%s" % (os.getuid(), os.getgroups(), field("NoNewPrivs"), field("Seccomp")))
print("HOME=" + os.environ["HOME"] + " TMPDIR=" + os.environ["TMPDIR"])
print("HOME-EMPTY=%s" % (os.listdir(os.environ["HOME"]) == []))
open(os.path.join(os.environ["HOME"], "left-in-home"), "w").write("x")
for pid in (${rcbPid}, os.getppid(), 1):
    for what in ("environ", "mem", "fd"):
        try:
            (os.listdir if what == "fd" else lambda p: open(p, "rb").read(1))("/proc/%d/%s" % (pid, what))
            print("READ /proc/%d/%s" % (pid, what))
        except OSError as e:
            print("DENIED /proc/%d/%s %s" % (pid, what, e.errno))
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    print("INET=ok")
except OSError as e:
    print("INET=%d" % e.errno)
for path in ("/tmp/${leftover}", "/dev/shm/${leftover}"):
    open(path, "w").write("left behind")
`;

const EXECUTORS = [
  { kind: 'cold', warm: false },
  { kind: 'warm', warm: true },
] as const;

(runningAsRoot() ? describe.each(EXECUTORS) : describe.skip.each(EXECUTORS))('$kind executor in the uid sandbox', ({ warm }) => {
  let paper: TinyPaper;
  let executor: ColdExecutor | WarmExecutor;
  const leftover = `rcb-uid-leftover-${randomBytes(4).toString('hex')}`;
  let first: string;
  let second: string;
  let tampered: string[];

  beforeAll(async () => {
    paper = makeTinyPaper();
    executor = await createLocalExecutor({ warm, sandbox: 'uid', jobs: 1, preload: warm ? ['json'] : undefined, warn: () => undefined });
    const source = modelSource(CORRECT_BODY, PROBE(process.pid, leftover));
    // Act: the same slot twice, so the second run sees what the first left in its home.
    const [a] = await executor.run([paper.candidate('first', source)]);
    const [b] = await executor.run([paper.candidate('second', source)]);
    first = a.stdout.text;
    second = b.stdout.text;
    tampered = a.tamperedFiles;
    expect([a.sandbox, a.exitCode, a.stderr.text.slice(-300)]).toEqual(['uid', 0, expect.any(String)]);
  });

  afterAll(async () => {
    await executor.close();
    rmSync(paper.root, { recursive: true, force: true });
    for (const dir of ['/tmp', '/dev/shm']) rmSync(`${dir}/${leftover}`, { force: true });
  });

  it('runs the test as an unprivileged slot uid without groups, under no_new_privs and seccomp', () => {
    const [, uid, groups, nnp, seccomp] = /UID=(\d+) GROUPS=(\S+) NNP=(\d) SECCOMP=(\d)/.exec(first)!;
    expect(Number(uid)).toBeGreaterThanOrEqual(1 << 30);
    expect([groups, nnp, seccomp]).toEqual(['[]', '1', '2']);
  });

  it('refuses the network', () => {
    expect(first).toContain('INET=97');
  });

  it('keeps rcb’s processes unreadable: environment, memory, file descriptors', () => {
    expect(first).not.toMatch(/^READ /m);
    expect(first.match(/^DENIED /gm)).toHaveLength(9);
  });

  it('gives the test a slot home for HOME and TMPDIR, emptied before the next test', () => {
    const home = /HOME=(\S+) TMPDIR=(\S+)/.exec(first)!;
    expect(home[1]).toBe(home[2]);
    expect(home[1]).not.toMatch(/^\/tmp\/?$/);
    expect(second).toContain('HOME-EMPTY=True');
  });

  it('reports the files it left in the host’s shared directories, and removes them', () => {
    expect(tampered).toEqual(expect.arrayContaining([`/tmp/${leftover}`, `/dev/shm/${leftover}`]));
    expect(existsSync(`/tmp/${leftover}`)).toBe(false);
    expect(existsSync(`/dev/shm/${leftover}`)).toBe(false);
  });
});

(runningAsRoot() ? describe : describe.skip)('takeFilesOfUid', () => {
  it('takes what the uid owns, searching world-writable directories and leaving what it skips', async () => {
    const uid = 2 ** 31 - 7;
    const root = mkdtempSync(join(tmpdir(), 'rcb-leftovers-'));
    const own = join(root, 'own-dir');
    const shared = join(root, 'shared');
    const skipped = join(root, 'run-dir');
    mkdirSync(join(own, 'deep'), { recursive: true });
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o1777);
    mkdirSync(skipped);
    for (const file of [join(own, 'deep', 'f'), join(shared, 'g'), join(skipped, 'h')]) writeFileSync(file, 'x');
    for (const path of [own, join(own, 'deep'), join(own, 'deep', 'f'), join(shared, 'g'), join(skipped, 'h')]) chownSync(path, uid, uid);
    writeFileSync(join(shared, 'someone-else'), 'x');

    const taken = await takeFilesOfUid(uid, [skipped], [root]);

    expect(taken.sort()).toEqual([join(shared, 'g'), own].sort());
    expect([existsSync(own), existsSync(join(shared, 'g')), existsSync(join(skipped, 'h')), existsSync(join(shared, 'someone-else'))]).toEqual([
      false,
      false,
      true,
      true,
    ]);
    rmSync(root, { recursive: true, force: true });
  });
});

(runningAsRoot() ? describe : describe.skip)('warm executor in the uid sandbox, between tests', () => {
  it('keeps its worker for the next candidate when the test left nothing running, and replaces it when it did', async () => {
    // Prepare
    const paper = makeTinyPaper();
    const workers: number[] = [];
    const executor = await createLocalExecutor({
      warm: true,
      sandbox: 'uid',
      jobs: 1,
      preload: ['json'],
      warn: () => undefined,
      trace: (event) => {
        if (event.kind === 'worker') workers.push(event.slot);
      },
    });
    const marker = `${300 + Math.floor(Math.random() * 600)}.${randomBytes(2).readUInt16BE()}`;
    const stray = modelSource(CORRECT_BODY, `import subprocess\nsubprocess.Popen(['sleep', '${marker}'], start_new_session=True)`);
    try {
      // Act
      const clean = await executor.run(['a', 'b', 'c'].map((id) => paper.candidate(id, modelSource(CORRECT_BODY))));
      const startedForClean = workers.length;
      const [left] = await executor.run([paper.candidate('stray', stray)]);
      const [after] = await executor.run([paper.candidate('after', modelSource(CORRECT_BODY))]);

      // Assess: three clean tests, one worker start (it was one per test: a stray was
      // reported after every test); the stray's worker replaced before the next test.
      expect(clean.map((r) => [r.sandbox, r.exitCode])).toEqual([
        ['uid', 0],
        ['uid', 0],
        ['uid', 0],
      ]);
      expect(startedForClean).toBe(1);
      expect(left.infraError).toBeUndefined();
      expect(after.exitCode).toBe(0);
      expect(workers).toHaveLength(2);
      expect(processesWith(`sleep\0${marker}`)).toEqual([]);
    } finally {
      await executor.close();
      rmSync(paper.root, { recursive: true, force: true });
    }
  });
});

/**
 * Python lines that wait until `p` (setpriv, started as root) runs as `uid`: the event the
 * checks below need, however long the machine takes to start it (a fixed 0.3 s was not).
 */
const UNTIL_P_HAS_UID = ["while int([l for l in open('/proc/%d/status' % p.pid) if l.startswith('Uid:')][0].split()[1]) != uid:", '    time.sleep(0.01)'];

(runningAsRoot() ? describe : describe.skip)('end_uid (rcb_contain.py)', () => {
  it('says whether the slot uid had a process, and ends it', () => {
    // Prepare: a slot uid of this process's block, and a process of that uid.
    const [user] = allocateSandboxUsers(1);
    const script = [
      'import subprocess, sys, time',
      `sys.path.insert(0, ${JSON.stringify(join(__dirname, '..', '..', 'adapters', 'executor', 'python'))})`,
      'import rcb_contain',
      `uid = ${user.uid}`,
      'before = rcb_contain.end_uid(uid, uid)',
      "p = subprocess.Popen(['setpriv', '--reuid=%d' % uid, '--regid=%d' % uid, '--clear-groups', 'sleep', '60'])",
      ...UNTIL_P_HAS_UID,
      'during = rcb_contain.end_uid(uid, uid)',
      'print(before, during, p.wait(), rcb_contain.end_uid(uid, uid))',
    ].join('\n');
    try {
      // Act
      const out = execFileSync('/usr/bin/python3', ['-c', script], { encoding: 'utf8', timeout: 60_000 });

      // Assess: nothing, then the sleep (killed: -9), then nothing again.
      expect(out.trim()).toBe('False True -9 False');
    } finally {
      releaseSandboxUsers([user]);
    }
  });

  it('runs from a small process outside the supervisor’s tree for a warm server (UidEnder), with the same answers', () => {
    // Prepare: a supervisor as the warm server makes it, and a process of the slot uid.
    const [user] = allocateSandboxUsers(1);
    const script = [
      'import os, subprocess, sys, time',
      `sys.path.insert(0, ${JSON.stringify(join(__dirname, '..', '..', 'adapters', 'executor', 'python'))})`,
      'import rcb_contain',
      `uid = ${user.uid}`,
      'c = rcb_contain.Containment(uid, uid, ender=True)',
      'c.start()',
      'children = rcb_contain.own_children()',
      'before = c.end_all()',
      "p = subprocess.Popen(['setpriv', '--reuid=%d' % uid, '--regid=%d' % uid, '--clear-groups', 'sleep', '60'])",
      ...UNTIL_P_HAS_UID,
      'had = c._ender.end()',
      'print(children, before, had, p.wait(), c.end_all())',
    ].join('\n');
    try {
      // Act
      const out = execFileSync('/usr/bin/python3', ['-c', script], { encoding: 'utf8', timeout: 60_000 });

      // Assess: the ender is no child of the supervisor; nothing, then the sleep (killed), then nothing.
      expect(out.trim()).toBe('[] (0, True) True -9 (0, True)');
    } finally {
      releaseSandboxUsers([user]);
    }
  });
});
