/**
 * The in-sandbox driver on its own, without a sandbox: a test run through it must look
 * exactly like `python paper2code_test.py` (output, tracebacks, exit status, argv,
 * sys.path, __main__), plus the report on its fd and the limits it sets.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseDriverReport } from '../../adapters/executor/driver-report';
import { CORRECT_BODY, makeTinyPaper, MODEL_FILE, modelSource, type TinyPaper, WRONG_BODY } from '../fixtures/executor/tiny-paper';

const PYTHON = '/usr/bin/python3';
const DRIVER = resolve(__dirname, '../../adapters/executor/python/rcb_driver.py');
const ENV = { PATH: '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1' };

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  report: string;
}

let paper: TinyPaper;

beforeAll(() => {
  paper = makeTinyPaper();
});

afterAll(() => {
  rmSync(paper.root, { recursive: true, force: true });
});

/** A fresh workspace with `source` as model.py (and optionally another test script). */
function workspace(source: string, testScript?: string): string {
  const dir = mkdtempSync(join(paper.root, 'ws-'));
  cpSync(paper.paperDir, dir, { recursive: true });
  writeFileSync(join(dir, MODEL_FILE), source);
  if (testScript !== undefined) writeFileSync(join(dir, 'paper2code_test.py'), testScript);
  return dir;
}

function plain(dir: string): Run {
  const r = spawnSync(PYTHON, ['paper2code_test.py'], { cwd: dir, env: ENV, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, report: '' };
}

function driven(dir: string, extra: string[] = []): Run {
  const r = spawnSync(PYTHON, [DRIVER, '--report-fd', '3', '--candidate', MODEL_FILE, ...extra, 'paper2code_test.py'], {
    cwd: dir,
    env: ENV,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, report: String(r.output[3] ?? '') };
}

const sameTiming = (text: string): string => text.replace(/in \d+\.\d+s/g, 'in Xs');

function expectSameAsPython(source: string, testScript?: string): Run {
  const dir = workspace(source, testScript);
  const expected = plain(dir);
  const actual = driven(dir);
  expect(actual.status).toBe(expected.status);
  expect(actual.stdout).toBe(expected.stdout);
  expect(sameTiming(actual.stderr)).toBe(sameTiming(expected.stderr));
  return actual;
}

describe('rcb_driver.py', () => {
  it('runs the test as python would: argv, __main__, sys.path, output and status', () => {
    const top = [
      'import sys, __main__',
      'print("argv", sys.argv, "main", __main__.__name__, __main__.__file__, "spec", __main__.__spec__)',
      'print("path", sys.path)',
    ].join('\n');

    const run = expectSameAsPython(modelSource(CORRECT_BODY, top));

    expect(run.status).toBe(0);
    expect(run.stdout).toContain("argv ['paper2code_test.py']");
    expect(parseDriverReport(run.report)).toMatchObject({ testsRun: 2, failures: 0, ending: 'exit', exitCode: 0 });
  });

  it.each([
    ['a failing test', modelSource(WRONG_BODY), undefined],
    ['an exception while importing the candidate', modelSource(CORRECT_BODY, 'raise KeyError("boom")'), undefined],
    ['a syntax error in the candidate', modelSource('    return a +* b'), undefined],
    ['an exception in a test', modelSource('    return undefined_name'), undefined],
    ['a syntax error in the test script', modelSource(CORRECT_BODY), 'import unittest\nx = (\n'],
    ['an uncaught exception in the test script', modelSource(CORRECT_BODY), 'raise ValueError("top level")\n'],
    ['sys.exit with a message', modelSource(CORRECT_BODY), 'import sys\nsys.exit("bye")\n'],
  ])('gives the same output and status as python for %s', (_name, source, testScript) => {
    const run = expectSameAsPython(source, testScript);

    expect(run.status).not.toBe(0);
    expect(run.stderr).not.toContain('rcb_driver');
    expect(parseDriverReport(run.report)).toHaveProperty('ending');
  });

  it('writes exactly one report when a forked child runs the script to its end too', () => {
    // Parent and child both run the tests; their output interleaves, so only the report is compared.
    const run = driven(workspace(modelSource(CORRECT_BODY, 'import os\nos.fork()')));

    expect(run.status).toBe(0);
    expect(parseDriverReport(run.report)).toMatchObject({ testsRun: 2, failures: 0 });
  });

  it('writes no report when the process ends with os._exit', () => {
    const run = driven(workspace(modelSource(CORRECT_BODY, 'import os\nos._exit(0)')));

    expect(run.status).toBe(0);
    expect(parseDriverReport(run.report)).toBeNull();
  });

  it('sets the limits with soft equal to hard, so the test cannot raise them', () => {
    const top = [
      'import resource',
      'for name in ["RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_CORE"]:',
      '    print(name, *resource.getrlimit(getattr(resource, name)))',
      'try:',
      '    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))',
      '    print("RAISED")',
      'except (ValueError, OSError):',
      '    print("NOT RAISED")',
    ].join('\n');

    const run = driven(workspace(modelSource(CORRECT_BODY, top)), ['--memory-mb', '2048', '--max-processes', '4000', '--max-file-mb', '64']);

    expect(run.stdout).toContain(`RLIMIT_AS ${2048 * 1024 * 1024} ${2048 * 1024 * 1024}`);
    expect(run.stdout).toContain('RLIMIT_NPROC 4000 4000');
    expect(run.stdout).toContain(`RLIMIT_FSIZE ${64 * 1024 * 1024} ${64 * 1024 * 1024}`);
    expect(run.stdout).toContain('RLIMIT_CORE 0 0');
    expect(run.stdout).toContain('NOT RAISED');
  });

  it('flags the candidate opening a reference file, and not the test doing the same', () => {
    const candidateReads = driven(workspace(modelSource('    open("model_ref.py").read()\n    return a + b')));
    const testReads = driven(workspace(modelSource(CORRECT_BODY), 'open("model_ref.py").read()\nimport model_ref, model\nimport sys\nsys.exit(0)\n'));

    expect(parseDriverReport(candidateReads.report)!.flags).toEqual(['ref_import', 'reference_access']);
    expect(parseDriverReport(testReads.report)!.flags).toEqual([]);
  });

  it('does not flag a library outside the workspace reading its own *_ref.py while the candidate imports it', () => {
    // pydantic's _internal/_forward_ref.py, read while a candidate imports timm, flagged the oracle of DyT, eomt and fractalgen.
    const lib = mkdtempSync(join(paper.root, 'lib-'));
    writeFileSync(join(lib, '_forward_ref.py'), 'X = 1\n');
    writeFileSync(join(lib, 'somelib.py'), 'import os\nopen(os.path.join(os.path.dirname(__file__), "_forward_ref.py")).read()\n');
    const top = `import sys\nsys.path.insert(0, ${JSON.stringify(lib)})\nimport somelib`;
    const run = driven(workspace(modelSource(CORRECT_BODY, top)));

    expect(parseDriverReport(run.report)!.flags).toEqual([]);
  });

  it('flags the candidate replacing sys.exit to hide failures', () => {
    const run = driven(workspace(modelSource(WRONG_BODY, 'import sys\nsys.exit = lambda *args: None')));

    expect(run.status).toBe(0);
    expect(parseDriverReport(run.report)).toMatchObject({ ending: 'return', failures: 1, flags: expect.arrayContaining(['unittest_patched']) });
  });
});
