/**
 * The uid sandbox's scan for what a test left outside its workspace (uid-leftovers.ts): a
 * slot uid can create files wherever others may write and search, at any depth and under
 * folders it cannot write itself (`mkdir -m 777 /tmp/x/ww` under a root-owned /tmp/x), in
 * /dev/shm, /var/tmp and /tmp, as plain files, folders, named pipes, sockets, symlinks and
 * hard links of its workspace's files. Every one is reported as tampering and removed, by
 * both executors; a folder it cannot reach is not searched.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ColdExecutor, WarmExecutor } from '../../adapters/executor';
import { createLocalExecutor } from '../../adapters/executor';
import { findWritableDirs, readMounts } from '../../adapters/executor/uid-leftovers';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { CORRECT_BODY, makeTinyPaper, modelSource, type TinyPaper } from '../fixtures/executor/tiny-paper';

jest.setTimeout(180_000);

/**
 * Made when the file loads, before any executor walks for writable folders: a closed
 * folder (755, root's) holding a world-writable one, and a chain of world-writable folders
 * five deep under another closed one.
 */
const fixture = runningAsRoot() ? makeFixture() : null;

function makeFixture() {
  const closed = mkdtempSync('/tmp/rcb-closed-');
  chmodSync(closed, 0o755);
  const ww = join(closed, 'ww');
  mkdirSync(ww);
  chmodSync(ww, 0o777);
  let deep = join(closed, 'deep');
  mkdirSync(deep);
  for (const name of ['a', 'b', 'c', 'd', 'e']) {
    deep = join(deep, name);
    mkdirSync(deep);
    chmodSync(deep, 0o777);
  }
  const sticky = join(closed, 'sticky');
  mkdirSync(sticky);
  chmodSync(sticky, 0o1777);
  const unreachable = mkdtempSync('/tmp/rcb-private-');
  mkdirSync(join(unreachable, 'ww'));
  chmodSync(join(unreachable, 'ww'), 0o777);
  return { closed, ww, deep, sticky, unreachable };
}

/** The test's writes: each kind of file, each where a fresh uid may write. */
const WRITES = (f: NonNullable<typeof fixture>, tag: string) => `
import os, socket
def attempt(what, fn):
    try:
        fn()
        print("WROTE " + what)
    except OSError as e:
        print("REFUSED %s %d" % (what, e.errno))
attempt("${f.ww}/${tag}-file", lambda: open("${f.ww}/${tag}-file", "w").write("x"))
attempt("${f.deep}/${tag}-deep", lambda: open("${f.deep}/${tag}-deep", "w").write("x"))
attempt("${f.sticky}/${tag}-sticky", lambda: open("${f.sticky}/${tag}-sticky", "w").write("x"))
attempt("${f.ww}/${tag}-fifo", lambda: os.mkfifo("${f.ww}/${tag}-fifo"))
attempt("${f.ww}/${tag}-link", lambda: os.link("model.py", "${f.ww}/${tag}-link"))
attempt("${f.ww}/${tag}-symlink", lambda: os.symlink("/etc/passwd", "${f.ww}/${tag}-symlink"))
def sock():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("${f.ww}/${tag}-sock")
attempt("${f.ww}/${tag}-sock", sock)
def nested():
    os.makedirs("${f.ww}/${tag}-dir/inner")
    os.chmod("${f.ww}/${tag}-dir", 0o777)
    open("${f.ww}/${tag}-dir/inner/f", "w").write("x")
attempt("${f.ww}/${tag}-dir", nested)
attempt("/dev/shm/${tag}-shm", lambda: open("/dev/shm/${tag}-shm", "w").write("x"))
attempt("/var/tmp/${tag}-vartmp", lambda: open("/var/tmp/${tag}-vartmp", "w").write("x"))
attempt("${f.unreachable}/ww/${tag}-private", lambda: open("${f.unreachable}/ww/${tag}-private", "w").write("x"))
`;

const EXECUTORS = [
  { kind: 'cold', warm: false },
  { kind: 'warm', warm: true },
] as const;

(runningAsRoot() ? describe.each(EXECUTORS) : describe.skip.each(EXECUTORS))(
  '$kind executor, uid sandbox: files left outside the workspace',
  ({ kind, warm }) => {
    const f = fixture!;
    const tag = `rcb-left-${kind}-${process.pid}`;
    let paper: TinyPaper;
    let executor: ColdExecutor | WarmExecutor;
    let wrote: string[];
    let tampered: string[];

    beforeAll(async () => {
      paper = makeTinyPaper();
      executor = await createLocalExecutor({ warm, sandbox: 'uid', jobs: 1, preload: warm ? ['json'] : undefined, warn: () => undefined });
      const [result] = await executor.run([paper.candidate('leaver', modelSource(CORRECT_BODY, WRITES(f, tag)))]);
      wrote = [...result.stdout.text.matchAll(/^WROTE (\S+)$/gm)].map((m) => m[1]);
      tampered = result.tamperedFiles;
    });

    afterAll(async () => {
      await executor?.close();
      rmSync(paper.root, { recursive: true, force: true });
    });

    it('writes every kind of file where others may write, and cannot write where it cannot reach', () => {
      expect(wrote.sort()).toEqual(
        [
          `${f.ww}/${tag}-file`,
          `${f.deep}/${tag}-deep`,
          `${f.sticky}/${tag}-sticky`,
          `${f.ww}/${tag}-fifo`,
          `${f.ww}/${tag}-link`,
          `${f.ww}/${tag}-symlink`,
          `${f.ww}/${tag}-sock`,
          `${f.ww}/${tag}-dir`,
          `/dev/shm/${tag}-shm`,
          `/var/tmp/${tag}-vartmp`,
        ].sort(),
      );
    });

    it('reports each as tampering and removes it', () => {
      expect(tampered).toEqual(expect.arrayContaining(wrote));
      expect(wrote.filter((path) => existsSync(path) || lstatExists(path))).toEqual([]);
    });
  },
);

const lstatExists = (path: string): boolean => {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
};

(runningAsRoot() ? describe : describe.skip)('findWritableDirs', () => {
  it('finds world-writable folders at any depth below closed ones, on every writable mount, and none it cannot reach', async () => {
    const f = fixture!;
    const found = await findWritableDirs();
    const here = await findWritableDirs({ find: null });
    for (const walk of [found, here]) {
      expect(walk.complete).toBe(true);
      expect(walk.dirs).toEqual(expect.arrayContaining(['/tmp', '/dev/shm', f.ww, f.deep, f.sticky]));
      expect(walk.dirs).not.toContain(join(f.unreachable, 'ww'));
      expect(walk.dirs).not.toContain(f.closed);
    }
  });

  it('skips read-only and virtual mounts', () => {
    const mounts = readMounts(
      [
        '22 1 0:21 / /proc rw,nosuid - proc proc rw',
        '23 1 8:1 / / rw,relatime - ext4 /dev/vda rw',
        '24 23 0:5 / /mnt/with\\040space ro,relatime - tmpfs none ro',
      ].join('\n'),
    );
    expect(mounts).toEqual([
      { path: '/proc', fsType: 'proc', readOnly: false },
      { path: '/', fsType: 'ext4', readOnly: false },
      { path: '/mnt/with space', fsType: 'tmpfs', readOnly: true },
    ]);
  });
});

afterAll(() => {
  if (!fixture) return;
  for (const dir of [fixture.closed, fixture.unreachable]) rmSync(dir, { recursive: true, force: true });
});
