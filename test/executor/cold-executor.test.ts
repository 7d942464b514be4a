/**
 * The cold executor with its bubblewrap sandbox, end to end: real bwrap, real python,
 * a tiny paper folder. Each test pins one behaviour of SPEC 7 or of the sandbox.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { RawExecution } from '../../core/executor';
import { type ColdExecutor, createColdExecutor } from '../../adapters/executor';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { passedSuiteReport } from '../helpers/driver-report';
import { CORRECT_BODY, makeTinyPaper, modelSource, processesWith, type TinyPaper, WRONG_BODY } from '../fixtures/executor/tiny-paper';
import { boundAfter, timed } from '../helpers/machine-speed';

let paper: TinyPaper;
let executor: ColdExecutor;
/** The shared executor's time limit. */
const TIMEOUT_SEC = 20;

const marker = (): string => `rcbmark${randomBytes(6).toString('hex')}`;

async function runOne(source: string, on: ColdExecutor = executor): Promise<RawExecution> {
  const [result] = await on.run([paper.candidate('tiny/add', source)]);
  return result;
}

beforeAll(async () => {
  paper = makeTinyPaper();
  executor = await createColdExecutor({ jobs: 4, limits: { timeoutSec: TIMEOUT_SEC }, warn: () => undefined });
});

afterAll(async () => {
  await executor?.close();
  rmSync(paper.root, { recursive: true, force: true });
});

describe('ColdExecutor (bwrap)', () => {
  describe('verdict inputs', () => {
    it('runs a correct candidate to a clean pass with the driver report', async () => {
      const r = await runOne(modelSource(CORRECT_BODY));

      expect(r.infraError).toBeUndefined();
      expect(r.exitCode).toBe(0);
      expect(r.killedFor).toBeNull();
      expect(r.sandbox).toBe('bwrap');
      expect(r.executor).toBe('cold');
      expect(r.markersSeen).toEqual([]);
      expect(r.tamperedFiles).toEqual([]);
      expect(r.driver).toEqual(passedSuiteReport(2));
      expect(r.stderr.text).toContain('OK');
    });

    it('reports a wrong candidate with exit 1, its failure counted and the error markers seen', async () => {
      const r = await runOne(modelSource(WRONG_BODY));

      expect(r.exitCode).toBe(1);
      expect(r.markersSeen).toEqual(expect.arrayContaining(['Traceback', 'failed', 'Error:']));
      expect(r.driver?.failures).toBe(1);
      expect(r.driver?.testsRun).toBe(2);
      expect(r.stderr.text).toContain('AssertionError');
    });

    it('reports a syntax error in the candidate the way python prints it', async () => {
      const r = await runOne(modelSource('    return a +* b'));

      expect(r.exitCode).toBe(1);
      expect(r.stderr.text).toMatch(/File "\/workspace\/model\.py", line \d+\n[^\n]*\n\s*\^\nSyntaxError: invalid syntax/);
      expect(r.stderr.text).not.toContain('rcb_driver');
      expect(r.markersSeen).toEqual(expect.arrayContaining(['Traceback', 'Error:']));
      expect(r.driver).toMatchObject({ ending: 'exception', testsRun: 0 });
    });

    it('runs candidates concurrently, calls onResult for each and returns them in input order', async () => {
      const seen: string[] = [];
      const sources = [CORRECT_BODY, WRONG_BODY, CORRECT_BODY].map((b) => modelSource(b));

      const results = await executor.run(
        sources.map((s, i) => paper.candidate(`tiny/add#${i}`, s)),
        (r) => void seen.push(r.taskId),
      );

      expect(results.map((r) => r.taskId)).toEqual(['tiny/add#0', 'tiny/add#1', 'tiny/add#2']);
      expect(results.map((r) => r.exitCode)).toEqual([0, 1, 0]);
      expect(seen.sort()).toEqual(['tiny/add#0', 'tiny/add#1', 'tiny/add#2']);
    });

    it('turns a failure of the executor on one candidate into infraError, not a thrown batch', async () => {
      const escaping = { ...paper.candidate('tiny/escape', 'x = 1\n'), file: '../escape.py' };

      const results = await executor.run([escaping, paper.candidate('tiny/add', modelSource(CORRECT_BODY))]);

      expect(results[0].infraError).toMatch(/not inside the paper folder/);
      expect(results[0].driver).toBeNull();
      expect(results[1].exitCode).toBe(0);
      expect(existsSync(join(paper.root, 'escape.py'))).toBe(false);
    });
  });

  describe('integrity', () => {
    it('reports base files the run changed or removed, but not the spliced file or new files', async () => {
      const top = [
        'import os',
        'with open("paper2code_test.py", "a") as f: f.write("\\n# edited\\n")',
        'os.remove(os.path.join("data", "fixture.txt"))',
        'with open("model.py", "a") as f: f.write("\\n# the spliced file may change\\n")',
        'with open("new_output.txt", "w") as f: f.write("new")',
      ].join('\n');

      const r = await runOne(modelSource(CORRECT_BODY, top));

      expect(r.tamperedFiles).toEqual(['data/fixture.txt', 'paper2code_test.py']);
    });

    it('leaves no driver report when the candidate ends the process with os._exit(0)', async () => {
      const r = await runOne(modelSource(CORRECT_BODY, 'import os\nos._exit(0)'));

      expect(r.exitCode).toBe(0);
      expect(r.driver).toBeNull();
    });

    it('flags sys.exit(0) raised while importing the candidate', async () => {
      const r = await runOne(modelSource(CORRECT_BODY, 'import sys\nsys.exit(0)'));

      expect(r.exitCode).toBe(0);
      expect(r.driver).toMatchObject({ ending: 'exit', exitCode: 0, exitRaisedIn: 'model.py', testsRun: 0 });
      expect(r.driver?.flags).toContain('exit_from_candidate');
    });

    it('flags the candidate importing the reference module, though the test itself imports it', async () => {
      const r = await runOne(modelSource('    from model_ref import add as reference\n    return reference(a, b)'));

      expect(r.exitCode).toBe(0);
      expect(r.driver?.flags).toEqual(['ref_import', 'reference_access']);
    });

    it('flags a candidate that monkeypatches unittest', async () => {
      const top = 'import unittest\nunittest.TestCase.run = lambda self, result=None: result';

      const r = await runOne(modelSource(WRONG_BODY, top));

      expect(r.exitCode).toBe(0);
      expect(r.driver?.testsRun).toBe(0);
      expect(r.driver?.flags).toContain('unittest_patched');
    });
  });

  describe('isolation', () => {
    it('gives the test only the allow-listed environment, refusing secret names even when asked', async () => {
      process.env.FAKE_API_KEY = 'sk-fake-1234567890';
      process.env.AWS_SECRET_ACCESS_KEY = 'aws-secret-0987654321';
      process.env.RCB_TEST_VISIBLE = 'visible-value';
      const warnings: string[] = [];
      const withEnv = await createColdExecutor({
        jobs: 1,
        envAllow: ['FAKE_API_KEY', 'AWS_SECRET_ACCESS_KEY', 'RCB_TEST_VISIBLE'],
        warn: (m) => void warnings.push(m),
      });
      try {
        const top = 'import json, os\nprint("ENV=" + json.dumps(dict(os.environ)))';

        const r = await runOne(modelSource(CORRECT_BODY, top), withEnv);

        const env = JSON.parse(/ENV=(.*)/.exec(r.stdout.text)![1]) as Record<string, string>;
        expect(env.RCB_TEST_VISIBLE).toBe('visible-value');
        expect(env.HOME).toBe('/tmp');
        expect(Object.keys(env).filter((k) => /KEY|SECRET|TOKEN|^AWS_/.test(k))).toEqual([]);
        expect(r.stdout.text).not.toContain('sk-fake');
        expect(r.stdout.text).not.toContain('aws-secret');
        expect(warnings.join('\n')).toMatch(/refusing .*FAKE_API_KEY/);
        expect(warnings.join('\n')).toMatch(/refusing .*AWS_SECRET_ACCESS_KEY/);
      } finally {
        await withEnv.close();
        delete process.env.FAKE_API_KEY;
        delete process.env.AWS_SECRET_ACCESS_KEY;
        delete process.env.RCB_TEST_VISIBLE;
      }
    });

    it('still gives python what papers use: numpy with its BLAS, multiprocessing, the user entry, /tmp', async () => {
      const top = [
        'import getpass, multiprocessing, os, tempfile',
        'import numpy as np',
        'def square(x):',
        '    return x * x',
        'def check_libraries():',
        '    # Called from a test, not at import: a pool started while importing its own module deadlocks.',
        '    with multiprocessing.Pool(2) as pool:',
        '        squares = pool.map(square, range(4))',
        '    fd, path = tempfile.mkstemp()',
        '    os.write(fd, b"scratch")',
        '    print("LIBS", getpass.getuser(), round(float(np.linalg.det(np.eye(3) * 2)), 6), squares, path.startswith("/tmp/"))',
        'checked = []',
      ].join('\n');
      const body = '    if not checked:\n        checked.append(check_libraries())\n    return a + b';

      const r = await runOne(modelSource(body, top));

      expect(r.stderr.text).not.toContain('Traceback');
      expect(r.stdout.text).toMatch(/LIBS rcb\d+ 8\.0 \[0, 1, 4, 9\] True/);
      expect(r.exitCode).toBe(0);
    });

    it('cannot reach a port listening on the host loopback', async () => {
      let connections = 0;
      const server: Server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as { port: number }).port;
      try {
        const top = [
          'import socket',
          'try:',
          `    socket.create_connection(("127.0.0.1", ${port}), timeout=2)`,
          '    print("NET=connected")',
          'except OSError as e:',
          '    print("NET=failed " + type(e).__name__)',
        ].join('\n');

        const r = await runOne(modelSource(CORRECT_BODY, top));

        expect(r.stdout.text).toContain('NET=failed');
        expect(connections).toBe(0);
      } finally {
        server.close();
      }
    });

    it('cannot write outside its workspace: host files stay as they were', async () => {
      const outside = join(paper.root, 'outside');
      mkdirSync(outside, { recursive: true });
      const existing = join(outside, 'existing.txt');
      const created = join(outside, 'created.txt');
      writeFileSync(existing, 'original');
      const top = [
        'import os',
        `for path in [${JSON.stringify(existing)}, ${JSON.stringify(created)}, "/root/rcb-written", "/usr/rcb-written"]:`,
        '    try:',
        '        os.makedirs(os.path.dirname(path), exist_ok=True)',
        '        with open(path, "w") as f: f.write("overwritten")',
        '        print("WRITE=ok " + path)',
        '    except OSError as e:',
        '        print("WRITE=failed " + path)',
      ].join('\n');

      const r = await runOne(modelSource(CORRECT_BODY, top));

      expect(r.stdout.text).toContain('WRITE=failed /usr/rcb-written');
      expect(r.stdout.text).toContain('WRITE=failed /root/rcb-written');
      expect(readFileSync(existing, 'utf8')).toBe('original');
      expect(existsSync(created)).toBe(false);
      expect(existsSync('/root/rcb-written')).toBe(false);
      expect(existsSync('/usr/rcb-written')).toBe(false);
    });

    it('cannot read files outside what python needs: the test dir, /root, the checkout', async () => {
      const secretFile = join(paper.root, 'secret.txt');
      writeFileSync(secretFile, 'TOP-SECRET-CONTENT');
      const top = [
        'import os',
        `for path in [${JSON.stringify(secretFile)}, ${JSON.stringify(`${paper.paperDir}/model_ref.py`)}, "/root", ${JSON.stringify(process.cwd())}]:`,
        '    try:',
        '        print("READ=ok " + path + " " + (open(path).read() if os.path.isfile(path) else repr(os.listdir(path))))',
        '    except OSError as e:',
        '        print("READ=failed " + path)',
      ].join('\n');

      const r = await runOne(modelSource(CORRECT_BODY, top));

      expect(r.stdout.text).not.toContain('TOP-SECRET-CONTENT');
      expect(r.stdout.text).not.toContain('READ=ok');
      expect(r.stdout.text.match(/READ=failed/g)).toHaveLength(4);
    });

    it('kills background processes with the run, even one in its own session', async () => {
      const spawned = marker();
      const forked = marker();
      const top = [
        'import os, subprocess, sys',
        `subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "${spawned}"], start_new_session=True)`,
        'if os.fork() == 0:',
        `    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", "${forked}"])`,
        'print("BACKGROUND=started", flush=True)',
      ].join('\n');

      const r = await runOne(modelSource(CORRECT_BODY, top));

      expect(r.stdout.text).toContain('BACKGROUND=started');
      expect(r.exitCode).toBe(0);
      // Ended with its test, not at the time limit: the background processes held nothing open.
      expect(r.killedFor).toBeNull();
      expect(r.durationMs).toBeLessThan(TIMEOUT_SEC * 1000);
      expect(processesWith(spawned)).toEqual([]);
      expect(processesWith(forked)).toEqual([]);
    });
  });

  describe('limits', () => {
    let tight: ColdExecutor;
    const TIGHT_SEC = 2;
    /** A passing run on the tight executor, now: this machine's cost of starting, running and ending one sandboxed test. */
    const referenceMs = async (): Promise<number> => {
      const r = await runOne(modelSource(CORRECT_BODY), tight);
      expect([r.exitCode, r.killedFor]).toEqual([0, null]);
      return r.durationMs;
    };

    beforeAll(async () => {
      tight = await createColdExecutor({
        jobs: 2,
        limits: { timeoutSec: TIGHT_SEC, maxProcesses: 32, maxOutputBytes: 32 * 1024 * 1024, logCapBytes: 4096 },
        warn: () => undefined,
      });
    });

    afterAll(async () => {
      await tight?.close();
    });

    it('kills a run that outlives the time limit and says so', async () => {
      const reference = await referenceMs();

      const r = await runOne(modelSource(CORRECT_BODY, 'import time\ntime.sleep(60)'), tight);

      expect(r.killedFor).toBe('timeout');
      expect(r.exitCode).not.toBe(0);
      expect(r.driver).toBeNull();
      // Not before its limit, and killed there: a few passing runs' worth after it, not at the end of its 60 s sleep.
      expect(r.durationMs).toBeGreaterThanOrEqual(TIGHT_SEC * 1000);
      expect(r.durationMs).toBeLessThan(boundAfter(TIGHT_SEC * 1000, reference));
    });

    it('cuts 100 MB of output to head and tail, kills it for output, and still sees a marker from the cut middle', async () => {
      const top = [
        'import sys',
        'out = sys.stdout.buffer',
        'out.write(b"HEAD-START\\n")',
        'filler = b"x" * (1024 * 1024)',
        'for i in range(100):',
        '    out.write(filler)',
        '    if i == 5:',
        '        out.write(b"\\nOops" + b"Exception: only in the middle\\n")',
        'out.flush()',
      ].join('\n');

      // Not on the tight executor: on a loaded machine 32 MB through a pipe can take longer than
      // its 2 s, and the time limit would strike first. The same output limits, the default time limit.
      const flood = await createColdExecutor({
        jobs: 1,
        limits: { maxProcesses: 32, maxOutputBytes: 32 * 1024 * 1024, logCapBytes: 4096 },
        warn: () => undefined,
      });
      let r: RawExecution;
      try {
        r = await runOne(modelSource(CORRECT_BODY, top), flood);
      } finally {
        await flood.close();
      }

      expect(r.killedFor).toBe('output');
      expect(r.stdout.truncated).toBe(true);
      expect(r.stdout.totalBytes).toBeGreaterThan(32 * 1024 * 1024);
      expect(r.stdout.totalBytes).toBeLessThan(100 * 1024 * 1024);
      expect(r.stdout.text.startsWith('HEAD-START\n')).toBe(true);
      expect(r.stdout.text).toMatch(/\n\[\.\.\. rcb: \d+ bytes cut \.\.\.\]\nx+$/);
      expect(r.stdout.text.length).toBeLessThan(4096 + 100);
      expect(r.stdout.text).not.toContain('Exception:');
      expect(r.markersSeen).toContain('Exception:');
    });

    it('contains a fork bomb and ends it within the time limit, leaving no process', async () => {
      const bombMarker = marker();
      const bomb = 'import os, time\\nwhile True:\\n    try:\\n        os.fork()\\n    except OSError:\\n        time.sleep(0.001)';
      const top = [
        'import os, subprocess, sys, time',
        `subprocess.Popen([sys.executable, "-c", "${bomb}", "${bombMarker}"])`,
        'def bombs():',
        '    count = 0',
        '    for pid in filter(str.isdigit, os.listdir("/proc")):',
        '        try:',
        `            count += "${bombMarker}" in open("/proc/%s/cmdline" % pid).read()`,
        '        except OSError:',
        '            pass',
        '    return count',
        // Counted once the bomb has spread and stopped growing (at the process limit), however slow the machine: not after a fixed second.
        'seen = [bombs()]',
        'while seen[-1] <= 10 or len(seen) < 10 or len(set(seen[-10:])) > 1:',
        '    time.sleep(0.02)',
        '    seen.append(bombs())',
        'print("BOMBS=%d" % seen[-1], flush=True)',
        'time.sleep(60)',
      ].join('\n');

      const reference = await referenceMs();

      const r = await runOne(modelSource(CORRECT_BODY, top), tight);

      // The bomb did run, up to the process limit (shared with the test's own processes).
      const bombs = Number(/BOMBS=(\d+)/.exec(r.stdout.text)?.[1]);
      expect(bombs).toBeGreaterThan(10);
      expect(bombs).toBeLessThanOrEqual(32);
      expect(r.killedFor).toBe('timeout');
      // Ended at its limit, every bomb with it, not at the end of its 60 s sleep.
      expect(r.durationMs).toBeLessThan(boundAfter(TIGHT_SEC * 1000, reference));
      expect(processesWith(bombMarker)).toEqual([]);
    });
  });
});

describe('ColdExecutor batches', () => {
  it('stops starting candidates and rejects when onResult throws', async () => {
    const one = await createColdExecutor({ jobs: 1, warn: () => undefined });
    const seen: string[] = [];
    try {
      const batch = ['a', 'b', 'c'].map((id) => paper.candidate(id, modelSource(CORRECT_BODY)));

      const run = one.run(batch, (r) => {
        seen.push(r.taskId);
        throw new Error('disk full');
      });

      await expect(run).rejects.toThrow('disk full');
      expect(seen).toEqual(['a']);
    } finally {
      await one.close();
    }
  });

  it('kills runs in flight on close and leaves no process behind', async () => {
    const closing = await createColdExecutor({ jobs: 1, limits: { timeoutSec: 30 }, warn: () => undefined });
    // This machine's cost of starting, running and ending one sandboxed test, now.
    const [reference] = await closing.run([paper.candidate('reference', modelSource(CORRECT_BODY))]);
    expect(reference.exitCode).toBe(0);
    const mark = marker();
    const top = `import subprocess, sys, time\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "${mark}"])\ntime.sleep(300)`;
    const running = closing.run([paper.candidate('slow', modelSource(CORRECT_BODY, top)), paper.candidate('never', 'x = 1\n')]);
    // Closed once the test is under way (its child is up), however long the start took.
    const upBy = performance.now() + boundAfter(0, reference.durationMs);
    while (processesWith(mark).length === 0 && performance.now() < upBy) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const {
      value: [slow, never],
      ms: closeMs,
    } = await timed(async () => {
      await closing.close();
      return running;
    });

    expect(slow.infraError).toMatch(/closed while this candidate ran/);
    // Killed at the close, within a few passing runs' time; not left to its 30 s limit.
    expect(closeMs).toBeLessThan(boundAfter(0, reference.durationMs));
    expect(never.infraError).toMatch(/closed before this candidate ran/);
    expect(processesWith(mark)).toEqual([]);
  });
});

describe('createColdExecutor', () => {
  it('refuses to run without bubblewrap when bwrap is asked for', async () => {
    await expect(createColdExecutor({ bwrap: '/nonexistent/bwrap', sandbox: 'bwrap', jobs: 1 })).rejects.toThrow(/apt-get install bubblewrap/);
  });

  it('falls back to the uid sandbox without bubblewrap as root (auto), and says so', async () => {
    if (!runningAsRoot()) return;
    const warnings: string[] = [];
    const executor = await createColdExecutor({ bwrap: '/nonexistent/bwrap', jobs: 1, warn: (m) => warnings.push(m) });
    try {
      const [r] = await executor.run([paper.candidate('auto', modelSource(CORRECT_BODY))]);
      expect([r.sandbox, r.exitCode]).toEqual(['uid', 0]);
      expect(warnings.join('\n')).toMatch(/using the uid sandbox/);
    } finally {
      await executor.close();
    }
  });
});
