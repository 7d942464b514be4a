import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { classifyFailure, lastException, type ClassifyInput } from '../../core/failure-class';

const PYTHON = '/usr/bin/python3';
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Run `main.py` (and the other files) with the real interpreter; what a test run would print. */
function runPython(files: Record<string, string>): ClassifyInput {
  const dir = mkdtempSync(join(tmpdir(), 'rcb-core-py-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const r = spawnSync(PYTHON, ['main.py'], { cwd: dir, env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' }, encoding: 'utf8' });
  return { completionEmpty: false, killedFor: null, signal: r.signal, exitCode: r.status, stderr: r.stderr, stdout: r.stdout };
}

/** A script that imports the candidate module, as paper2code_test.py does. */
const importing = (model: string) => runPython({ 'main.py': 'import model\nmodel.run()\n', 'model.py': model });

const unittestOf = (...tests: string[]) =>
  runPython({
    'main.py': ['import unittest', '', 'class T(unittest.TestCase):', ...tests.map((t) => `    ${t}`), '', 'unittest.main()', ''].join('\n'),
  });

describe('classifyFailure on real Python output (SPEC 10)', () => {
  it.each<[string, string, string]>([
    ['SyntaxError', 'def run(:\n    pass\n', 'syntax'],
    ['IndentationError', 'def run():\nreturn 1\n', 'syntax'],
    ['TabError', 'def run():\n\tif True:\n        return 1\n', 'syntax'],
    ['NameError', 'def run():\n    return undefined_thing\n', 'name'],
    ['UnboundLocalError', 'def run():\n    total += 1\n    total = 0\n', 'name'],
    ['TypeError', 'def run():\n    return len(5)\n', 'type'],
    ['AttributeError', 'def run():\n    return None.shape\n', 'attribute'],
    ['IndexError', 'def run():\n    return [][1]\n', 'index_key'],
    ['KeyError', 'def run():\n    return {}["k"]\n', 'index_key'],
    ['ImportError', 'from os import no_such_name\ndef run():\n    pass\n', 'import'],
    ['ModuleNotFoundError', 'import no_such_module_rcb\ndef run():\n    pass\n', 'import'],
    ['AssertionError from assert', 'def run():\n    assert 1 == 2, "wrong value"\n', 'functional'],
    ['ValueError', 'def run():\n    raise ValueError("bad shape")\n', 'runtime'],
    ['ZeroDivisionError', 'def run():\n    return 1 / 0\n', 'runtime'],
    ['MemoryError', 'def run():\n    raise MemoryError\n', 'resource'],
    ['a custom exception not named ...Error', 'class Boom(Exception):\n    pass\ndef run():\n    raise Boom("no")\n', 'runtime'],
  ])('classes %s in the candidate module', (_name, model, expected) => {
    // Act
    const output = importing(model);

    // Assess
    expect(output.exitCode).toBe(1);
    expect(classifyFailure(output)).toBe(expected);
  });

  it('classes a syntax error in the script itself, printed without a traceback header', () => {
    // Prepare
    const output = runPython({ 'main.py': 'x = (\n' });

    // Act
    const cls = classifyFailure(output);

    // Assess
    expect(output.stderr).not.toContain('Traceback');
    expect(cls).toBe('syntax');
  });

  it('classes a unittest FAIL with AssertionError as functional', () => {
    // Prepare
    const output = unittestOf('def test_value(self):', '    self.assertEqual(1, 2)');

    // Act
    const cls = classifyFailure(output);

    // Assess
    expect(output.stderr).toMatch(/^FAIL: test_value/m);
    expect(cls).toBe('functional');
  });

  it('reads the last traceback of a unittest run with several', () => {
    // Prepare: unittest prints test_a's TypeError, then test_b's KeyError.
    const output = unittestOf('def test_a(self):', '    len(5)', 'def test_b(self):', '    {}["k"]');

    // Act
    const cls = classifyFailure(output);

    // Assess
    expect(output.stderr.indexOf('TypeError')).toBeLessThan(output.stderr.indexOf('KeyError'));
    expect(lastException(output.stderr)).toBe('KeyError');
    expect(cls).toBe('index_key');
  });

  it.each([
    ['implicitly', 'def run():\n    try:\n        [][1]\n    except IndexError:\n        None.shape\n', 'During handling of the above exception'],
    ['with from', 'def run():\n    try:\n        [][1]\n    except IndexError as e:\n        raise AttributeError("x") from e\n', 'direct cause'],
  ])('reads the final exception of a chain raised %s', (_how, model, joint) => {
    // Act
    const output = importing(model);

    // Assess
    expect(output.stderr).toContain(joint);
    expect(output.stderr).toContain('IndexError');
    expect(classifyFailure(output)).toBe('attribute');
  });

  it('reads stdout when the traceback was printed there', () => {
    // Prepare
    const output = runPython({
      'main.py': 'import traceback, sys\ntry:\n    len(5)\nexcept TypeError:\n    traceback.print_exc(file=sys.stdout)\n    sys.exit(1)\n',
    });

    // Act
    const cls = classifyFailure(output);

    // Assess
    expect(output.stderr).toBe('');
    expect(cls).toBe('type');
  });

  it('classes a non-zero exit with no exception as functional', () => {
    // Prepare
    const output = runPython({ 'main.py': 'import sys\nprint("values differ")\nsys.exit(1)\n' });

    // Act & Assess
    expect(classifyFailure(output)).toBe('functional');
  });
});

describe('classifyFailure on how the run ended', () => {
  const base: ClassifyInput = { completionEmpty: false, killedFor: null, signal: null, exitCode: 1, stderr: '', stdout: '' };
  const traceback = 'Traceback (most recent call last):\n  File "model.py", line 1, in <module>\nNameError: name \'x\' is not defined\n';

  it('classes an empty completion as no_code before anything else', () => {
    expect(classifyFailure({ ...base, completionEmpty: true, killedFor: 'timeout', stderr: traceback })).toBe('no_code');
  });

  it('classes a run killed for time as timeout, whatever it printed', () => {
    expect(classifyFailure({ ...base, killedFor: 'timeout', exitCode: null, signal: 'SIGKILL', stderr: traceback })).toBe('timeout');
  });

  it('classes a run killed for output size as resource, whatever it printed', () => {
    expect(classifyFailure({ ...base, killedFor: 'output', exitCode: null, signal: 'SIGKILL', stdout: traceback })).toBe('resource');
  });

  it('classes a run killed by a signal with no exception as resource', () => {
    expect(classifyFailure({ ...base, exitCode: null, signal: 'SIGKILL' })).toBe('resource');
  });

  it('classes a unittest ERROR line without a traceback as runtime', () => {
    expect(classifyFailure({ ...base, stderr: 'ERROR: test_x (__main__.T.test_x)\n[... rcb: 100 bytes cut ...]\n' })).toBe('runtime');
  });
});

describe('lastException', () => {
  it('takes the exception line that ends the last traceback, not later output', () => {
    // Prepare: realistic unittest tail after the traceback.
    const text = [
      'Traceback (most recent call last):',
      '  File "t.py", line 3, in test_x',
      '    raise ValueError("a")',
      'ValueError: a',
      '',
      '======================================================================',
      'FAIL: test_y (__main__.T.test_y)',
      '----------------------------------------------------------------------',
      'Traceback (most recent call last):',
      '  File "t.py", line 5, in test_y',
      '    self.assertTrue(False)',
      'AssertionError: False is not true',
      'KeyError: printed later by the test',
      '',
      '----------------------------------------------------------------------',
      'Ran 2 tests in 0.001s',
      '',
      'FAILED (failures=1, errors=1)',
    ].join('\n');

    // Act & Assess
    expect(lastException(text)).toBe('AssertionError');
  });

  it('keeps the dotted name of an exception from a module', () => {
    expect(lastException('Traceback (most recent call last):\n  File "x.py", line 1\nnumpy.linalg.LinAlgError: Singular matrix\n')).toBe(
      'numpy.linalg.LinAlgError',
    );
  });

  it('finds nothing in output without an exception', () => {
    expect(lastException('all good\nOK\n')).toBeNull();
  });
});
