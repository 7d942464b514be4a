import type { Candidate, RawExecution, TestExecutor } from '../../core/executor';
import { checkEnvironment, ENV_CHECK_ATTEMPTS, failureReason, type EnvironmentCache } from '../../core/run/env-check';
import { readPset } from '../../core/pset/read-pset';
import type { PaperEnvironment } from '../../core/records';
import { passedSuiteReport } from '../helpers/driver-report';
import { goodPaperFiles, makeTempPset, removeTempPsets } from '../fixtures/core/temp-pset';

afterAll(removeTempPsets);

const log = (text: string) => ({ text, totalBytes: Buffer.byteLength(text), truncated: false });

function run(over: Partial<RawExecution> = {}): RawExecution {
  return {
    taskId: 't',
    exitCode: 0,
    signal: null,
    durationMs: 5,
    killedFor: null,
    stdout: log(''),
    stderr: log('Ran 1 test\n\nOK\n'),
    markersSeen: [],
    driver: passedSuiteReport(1),
    tamperedFiles: [],
    sandbox: 'bwrap',
    executor: 'cold',
    ...over,
  };
}

const failed = (stderr: string) => run({ exitCode: 1, markersSeen: ['Traceback'], stderr: log(stderr), driver: null });

describe('failureReason', () => {
  it('names the missing module', () => {
    const raw = failed(
      'Traceback (most recent call last):\n  File "paper2code_test.py", line 3, in <module>\n    import timm\nModuleNotFoundError: No module named \'timm\'\n',
    );
    expect(failureReason(raw, [])).toBe('missing module timm');
  });

  it('gives the first error line otherwise', () => {
    const raw = failed("Traceback (most recent call last):\n  File \"x.py\", line 1\nAttributeError: module 'torch' has no attribute '_foreach_lerp_'\n");
    expect(failureReason(raw, [])).toBe("AttributeError: module 'torch' has no attribute '_foreach_lerp_'");
  });

  it('says how the test ended when it printed no error', () => {
    expect(failureReason(run({ killedFor: 'timeout', exitCode: null, signal: 'SIGKILL' }), [])).toBe('the test timed out');
    expect(failureReason(run({ exitCode: 3, stderr: log('') }), [])).toBe('exit status 3');
    expect(failureReason(run(), ['no_tests_ran'])).toBe('the oracle fails the strict judge (no_tests_ran)');
  });
});

/** An executor that answers each paper's candidate with the execution given for it, and records what it ran. */
class FakeExecutor implements TestExecutor {
  readonly ran: Candidate[] = [];
  /** Each paper's executions in turn (the last one repeats), or one execution every time. */
  constructor(private readonly byPaper: Record<string, RawExecution | RawExecution[]>) {}
  async run(candidates: Candidate[]): Promise<RawExecution[]> {
    return candidates.map((c) => {
      const times = this.ran.filter((r) => r.paper === c.paper).length;
      this.ran.push(c);
      const answers = [this.byPaper[c.paper]].flat();
      return { ...answers[Math.min(times, answers.length - 1)], taskId: c.taskId };
    });
  }
  async close(): Promise<void> {}
}

class MemoryCache implements EnvironmentCache {
  readonly entries = new Map<string, PaperEnvironment>();
  get(digest: string, interpreter: string) {
    return this.entries.get(`${interpreter}|${digest}`) ?? null;
  }
  put(digest: string, interpreter: string, result: PaperEnvironment) {
    this.entries.set(`${interpreter}|${digest}`, result);
  }
}

describe('checkEnvironment', () => {
  const files = goodPaperFiles();
  const root = makeTempPset({
    ...files,
    'papers.yaml': files['papers.yaml'] + files['papers.yaml'].replace(/alpha/g, 'beta').replace(/Alpha/g, 'Beta'),
    ...Object.fromEntries(
      Object.entries(files)
        .filter(([k]) => k.startsWith('alpha/'))
        .map(([k, v]) => [k.replace('alpha/', 'beta/'), v]),
    ),
  });
  const { pset, problems } = readPset(root);

  it("runs one oracle candidate per paper, the paper's own file, and caches each result by paper and interpreter", async () => {
    // Prepare
    expect(problems).toEqual([]);
    const executor = new FakeExecutor({ alpha: run(), beta: failed("ModuleNotFoundError: No module named 'jax'\n") });
    const cache = new MemoryCache();

    // Act
    const result = await checkEnvironment({ executor, cache }, { pset, interpreter: '/usr/bin/python3' });

    // Assess
    expect(result).toEqual([
      { paper: 'alpha', runs: true, reason: null },
      { paper: 'beta', runs: false, reason: 'missing module jax' },
    ]);
    expect(executor.ran.map((c) => c.paper)).toEqual(['alpha', 'beta']);
    const alpha = pset.papers[0];
    expect(executor.ran[0].source).toBe(`${alpha.annotatedFiles[0].lines.join('\n')}\n`);
    expect(cache.get(alpha.digest, '/usr/bin/python3')).toEqual({ paper: 'alpha', runs: true, reason: null });
  });

  it('reads what the cache knows for this interpreter, runs the rest, and runs everything with refresh', async () => {
    // Prepare
    const cache = new MemoryCache();
    cache.put(pset.papers[1].digest, '/usr/bin/python3', { paper: 'beta', runs: false, reason: 'missing module jax' });
    const executor = new FakeExecutor({ alpha: run(), beta: run() });

    // Act
    const cached = await checkEnvironment({ executor, cache }, { pset, interpreter: '/usr/bin/python3' });
    const ranFirst = executor.ran.map((c) => c.paper);
    const otherPython = await checkEnvironment({ executor, cache }, { pset, interpreter: '/opt/venv/bin/python' });
    const refreshed = await checkEnvironment({ executor, cache }, { pset, interpreter: '/usr/bin/python3', refresh: true });

    // Assess
    expect(cached[1]).toEqual({ paper: 'beta', runs: false, reason: 'missing module jax' });
    expect(ranFirst).toEqual(['alpha']);
    expect(otherPython.every((p) => p.runs)).toBe(true);
    expect(refreshed[1]).toEqual({ paper: 'beta', runs: true, reason: null });
  });

  it('does not remember an executor failure, which says nothing about the environment', async () => {
    // Prepare
    const cache = new MemoryCache();
    const executor = new FakeExecutor({ alpha: run({ infraError: 'bwrap failed' }), beta: run() });

    // Act
    const result = await checkEnvironment({ executor, cache }, { pset, interpreter: '/usr/bin/python3' });

    // Assess
    expect(result[0]).toEqual({ paper: 'alpha', runs: false, reason: 'executor error: bwrap failed' });
    expect(cache.get(pset.papers[0].digest, '/usr/bin/python3')).toBeNull();
  });

  it('checks a paper again when its oracle failed for another reason than a missing module: a reference that fails by chance or load keeps its paper', async () => {
    // Prepare: alpha's test fails once by its own wall-clock budget (LEN's), then passes; beta lacks a module.
    const cache = new MemoryCache();
    const budget = failed('Traceback (most recent call last):\nValueError: No iterations were completed with non-zero input\n');
    const executor = new FakeExecutor({ alpha: [budget, run()], beta: failed("ModuleNotFoundError: No module named 'jax'\n") });

    // Act
    const result = await checkEnvironment({ executor, cache }, { pset, interpreter: '/usr/bin/python3' });

    // Assess: alpha ran twice and runs; beta, whose failure says what is missing, once.
    expect(result).toEqual([
      { paper: 'alpha', runs: true, reason: null },
      { paper: 'beta', runs: false, reason: 'missing module jax' },
    ]);
    expect(executor.ran.map((c) => c.paper)).toEqual(['alpha', 'beta', 'alpha']);
    expect(cache.get(pset.papers[0].digest, '/usr/bin/python3')).toEqual({ paper: 'alpha', runs: true, reason: null });
  });

  it(`declares a paper env_broken when its oracle fails all ${ENV_CHECK_ATTEMPTS} checks, with the last failure's reason`, async () => {
    // Prepare
    const executor = new FakeExecutor({
      alpha: [failed('KeyError: first\n'), failed("KeyError: 'PixelNorm is already registered in norm layer'\n")],
      beta: run(),
    });

    // Act
    const result = await checkEnvironment({ executor }, { pset, interpreter: '/usr/bin/python3' });

    // Assess
    expect(result[0]).toEqual({ paper: 'alpha', runs: false, reason: "KeyError: 'PixelNorm is already registered in norm layer'" });
    expect(executor.ran.filter((c) => c.paper === 'alpha')).toHaveLength(ENV_CHECK_ATTEMPTS);
    expect(executor.ran.filter((c) => c.paper === 'beta')).toHaveLength(1);
  });
});
