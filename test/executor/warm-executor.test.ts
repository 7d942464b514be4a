/**
 * The warm pool's own promises, beyond verdict equivalence: a candidate sees nothing of
 * the ones before it, the test runs as `python paper2code_test.py` would, linked base
 * files cannot be changed, and a worker that a candidate taints is replaced.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RawExecution } from '../../core/executor';
import { type ColdExecutor, createColdExecutor, createWarmExecutor, detectPreloadModules, type WarmExecutor } from '../../adapters/executor';
import { LINK_THRESHOLD_BYTES } from '../../adapters/executor/warm-workspace';
import { CORRECT_BODY, makeTinyPaper, modelSource, processesWith, type TinyPaper } from '../fixtures/executor/tiny-paper';
import { PSET_MINI } from '../helpers/cli';
import { LOAD_SLACK, timed } from '../helpers/machine-speed';

jest.setTimeout(120_000);

const LIMITS = { timeoutSec: 10 };
const BIG_FILE = 'weights.bin';

let paper: TinyPaper;
let warm: WarmExecutor;
let cold: ColdExecutor;

async function runWarm(source: string): Promise<RawExecution> {
  const [r] = await warm.run([paper.candidate('tiny/add', source)]);
  return r;
}

beforeAll(async () => {
  paper = makeTinyPaper();
  writeFileSync(join(paper.paperDir, BIG_FILE), Buffer.alloc(LINK_THRESHOLD_BYTES, 7));
  // One slot, so consecutive candidates share a worker.
  warm = await createWarmExecutor({ jobs: 1, limits: LIMITS, preload: ['json'], warn: () => undefined });
  cold = await createColdExecutor({ jobs: 1, limits: LIMITS, warn: () => undefined });
});

afterAll(async () => {
  await warm?.close();
  await cold?.close();
  rmSync(paper.root, { recursive: true, force: true });
});

describe('WarmExecutor', () => {
  it('runs the test as python would: same argv, __main__, cwd, sys.path[0] and module origins as cold', async () => {
    const probe = [
      'import os, sys, unittest',
      "print('PROBE', sys.argv, os.getcwd(), sys.path[0], __name__, sys.modules['__main__'].__file__)",
      "print('UID', os.getuid() != 0, 'FDS', sorted(int(f) for f in os.listdir('/proc/self/fd'))[:4])",
    ].join('\n');
    const source = modelSource(CORRECT_BODY, probe);

    const [w] = await warm.run([paper.candidate('tiny/add', source)]);
    const [c] = await cold.run([paper.candidate('tiny/add', source)]);

    expect(w.stdout.text).toContain("PROBE ['paper2code_test.py'] /workspace /workspace model /workspace/paper2code_test.py");
    expect(w.stdout.text).toEqual(c.stdout.text);
    expect(w.exitCode).toBe(0);
  });

  it('collects garbage as a fresh interpreter does: the collector on, the same thresholds (the server imports with it off)', async () => {
    const probe = ['import gc', "print('GC', gc.isenabled(), gc.get_threshold())"].join('\n');
    const source = modelSource(CORRECT_BODY, probe);

    const [w] = await warm.run([paper.candidate('tiny/add', source)]);
    const [c] = await cold.run([paper.candidate('tiny/add', source)]);

    expect(w.stdout.text).toMatch(/GC True \(\d+, \d+, \d+\)/);
    expect(w.stdout.text).toEqual(c.stdout.text);
  });

  it.each([
    ['an atexit handler', "import atexit\natexit.register(lambda: print('BYE from atexit'))"],
    ['a finalizer at shutdown', "class _Late:\n    def __del__(self):\n        print('BYE from __del__')\n_late = _Late()"],
    ['a non-daemon thread', "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.3), print('BYE from thread'))).start()"],
    ['a non-integer exit', "import sys\nsys.exit('leaving with a message')"],
  ])('ends the interpreter as python does with %s', async (_what, top) => {
    const source = modelSource(CORRECT_BODY, top);

    const [w] = await warm.run([paper.candidate('tiny/add', source)]);
    const [c] = await cold.run([paper.candidate('tiny/add', source)]);

    const untimed = (text: string): string => text.replace(/ in \d+\.\d+s/g, ' in Ts');
    expect({ exit: w.exitCode, out: w.stdout.text, err: untimed(w.stderr.text), driver: w.driver }).toEqual({
      exit: c.exitCode,
      out: c.stdout.text,
      err: untimed(c.stderr.text),
      driver: c.driver,
    });
  });

  it('gives a candidate nothing of the one before it: files, /tmp, modules, environment', async () => {
    const mark = `rcbwarm${randomBytes(4).toString('hex')}`;
    const first = modelSource(
      CORRECT_BODY,
      [
        'import json, os',
        `json.${mark} = True`,
        `os.environ['${mark}'] = '1'`,
        `open('/tmp/${mark}', 'w').write('x')`,
        `open('${mark}.txt', 'w').write('x')`,
      ].join('\n'),
    );
    const second = modelSource(
      CORRECT_BODY,
      [
        'import json, os',
        `print('SEEN', hasattr(json, '${mark}'), '${mark}' in os.environ, os.path.exists('/tmp/${mark}'), os.path.exists('${mark}.txt'))`,
      ].join('\n'),
    );

    await runWarm(first);
    const r = await runWarm(second);

    expect(r.stdout.text).toContain('SEEN False False False False');
    expect(r.exitCode).toBe(0);
  });

  it('imports the paper modules fresh for every candidate', async () => {
    const wrong = await runWarm(modelSource('    return a - b'));
    const right = await runWarm(modelSource(CORRECT_BODY));

    expect(wrong.exitCode).toBe(1);
    expect(right.exitCode).toBe(0);
  });

  it('keeps a hardlinked base file unchanged for the pset and the next candidate', async () => {
    const original = readFileSync(join(paper.paperDir, BIG_FILE));
    const attack = modelSource(
      CORRECT_BODY,
      [
        'import os',
        'try:',
        `    os.chmod('${BIG_FILE}', 0o666)`,
        'except OSError:',
        '    pass',
        'try:',
        `    open('${BIG_FILE}', 'r+b').write(b'pwned')`,
        'except OSError:',
        '    pass',
      ].join('\n'),
    );
    const check = modelSource(CORRECT_BODY, `print('HEAD', open('${BIG_FILE}', 'rb').read(5))`);

    const attacked = await runWarm(attack);
    const next = await runWarm(check);

    expect(readFileSync(join(paper.paperDir, BIG_FILE)).equals(original)).toBe(true);
    expect(next.stdout.text).toContain("HEAD b'\\x07\\x07\\x07\\x07\\x07'");
    // Either the write was refused (root: the base is root-owned) or it was seen as tampering.
    if (attacked.tamperedFiles.length === 0) expect(attacked.exitCode).toBe(0);
    else expect(attacked.tamperedFiles).toEqual([BIG_FILE]);
  });

  it('replaces a worker whose candidate left a process behind, and leaves none running', async () => {
    const marker = `${300 + Math.floor(Math.random() * 600)}.${randomBytes(2).readUInt16BE()}`;
    const stray = modelSource(CORRECT_BODY, ['import subprocess', `subprocess.Popen(['sleep', '${marker}'], start_new_session=True)`].join('\n'));

    const r = await runWarm(stray);
    const after = await runWarm(modelSource(CORRECT_BODY));

    expect(r.infraError).toBeUndefined();
    expect(after.exitCode).toBe(0);
    expect(processesWith(`sleep\0${marker}`)).toEqual([]);
  });

  it('fails a candidate that kills its server, and carries on with a new worker', async () => {
    const r = await runWarm(modelSource(CORRECT_BODY, 'import os, signal\nos.kill(os.getppid(), signal.SIGKILL)'));
    const after = await runWarm(modelSource(CORRECT_BODY));

    expect(r.exitCode === 0 && r.driver !== null).toBe(false);
    expect(after.exitCode).toBe(0);
    expect(after.driver?.testsRun).toBe(2);
  });

  it('stops a candidate at the time limit', async () => {
    // The candidate after the loop runs on a new worker (the timed-out one is replaced), under
    // the same limit: a limit a loaded machine could not meet for a fresh worker's first test
    // would fail it for the load. So the limit is ten times such a start and test, measured here.
    const fresh = await createWarmExecutor({ jobs: 1, limits: LIMITS, warn: () => undefined });
    let referenceMs: number;
    try {
      ({ ms: referenceMs } = await timed(() => fresh.run([paper.candidate('tiny/add', modelSource(CORRECT_BODY))])));
    } finally {
      await fresh.close();
    }
    const timeoutSec = Math.max(1, Math.ceil((LOAD_SLACK * referenceMs) / 1000));
    const quick = await createWarmExecutor({ jobs: 1, limits: { timeoutSec }, warn: () => undefined });
    try {
      const [r] = await quick.run([paper.candidate('tiny/add', modelSource('    while True:\n        pass'))]);
      const [next] = await quick.run([paper.candidate('tiny/add', modelSource(CORRECT_BODY))]);

      expect(r.killedFor).toBe('timeout');
      expect(r.driver).toBeNull();
      expect(next.exitCode).toBe(0);
    } finally {
      await quick.close();
    }
  });

  it('runs coldOnly papers through the cold executor', async () => {
    const mixed = await createWarmExecutor({ jobs: 1, limits: LIMITS, coldOnly: ['tiny-paper'], warn: () => undefined });
    try {
      const [r] = await mixed.run([paper.candidate('tiny/add', modelSource(CORRECT_BODY))]);

      expect(r.executor).toBe('cold');
      expect(r.exitCode).toBe(0);
    } finally {
      await mixed.close();
    }
  });
});

describe('detectPreloadModules', () => {
  it('finds the third-party modules of the example pset and not the papers own', () => {
    const dirs = ['adamlite', 'grouprms', 'smoothfocal', 'temperedattn'].map((p) => join(PSET_MINI, p));

    const modules = detectPreloadModules(dirs);

    expect(modules).toContain('numpy');
    expect(modules).not.toContain('norm');
    expect(modules).not.toContain('norm_ref');
  });
});
