import type { DriverReport, RawExecution } from '../../core/executor';
import { executionOf, judge, officialPass, OFFICIAL_MARKERS, rejudge, strictFlags, verdictWithoutRun, type JudgeContext } from '../../core/judge';
import { passedSuiteReport } from '../helpers/driver-report';

const log = (text: string) => ({ text, totalBytes: Buffer.byteLength(text), truncated: false });

/** A driver report of a unittest suite that ran 3 tests and all passed. */
const cleanDriver = (over: Partial<DriverReport> = {}): DriverReport => passedSuiteReport(3, over);

/** A clean run: exit 0, no marker, the driver saw the suite pass. */
const cleanRun = (over: Partial<RawExecution> = {}): RawExecution => ({
  taskId: 't1',
  exitCode: 0,
  signal: null,
  durationMs: 120,
  killedFor: null,
  stdout: log(''),
  stderr: log('...\n----------------------------------------------------------------------\nRan 3 tests in 0.01s\n\nOK\n'),
  markersSeen: [],
  driver: cleanDriver(),
  tamperedFiles: [],
  sandbox: 'bwrap',
  executor: 'warm',
  ...over,
});

const ctx: JudgeContext = { completion: '    return x + 1\n', testUsesUnittest: true };
const fixedNow = () => new Date('2025-01-02T03:04:05.000Z');

describe('officialPass (SPEC 7 original rule)', () => {
  it('passes exit 0 with none of the four markers', () => {
    expect(officialPass(cleanRun())).toBe(true);
  });

  it('fails a non-zero exit', () => {
    expect(officialPass(cleanRun({ exitCode: 1 }))).toBe(false);
  });

  it.each(OFFICIAL_MARKERS.map((m) => [m]))('fails exit 0 when %j was seen, even if cut from the kept logs', (marker) => {
    // Prepare: the kept logs do not show it; the executor saw it in the full stream.
    const raw = cleanRun({ markersSeen: [marker], stdout: log(''), stderr: log('OK\n') });

    // Act & Assess
    expect(officialPass(raw)).toBe(false);
  });

  it('names exactly the four case-sensitive markers of the original harness', () => {
    expect([...OFFICIAL_MARKERS]).toEqual(['Error:', 'Exception:', 'Traceback', 'failed']);
  });

  it('fails a run killed for time even if it reported status 0', () => {
    expect(officialPass(cleanRun({ killedFor: 'timeout' }))).toBe(false);
  });
});

describe('strictFlags', () => {
  it('is empty for a suite that demonstrably ran and succeeded', () => {
    expect(strictFlags(cleanRun(), ctx)).toEqual([]);
  });

  it('flags a run without a driver report as no_completion_evidence', () => {
    expect(strictFlags(cleanRun({ driver: null }), ctx)).toEqual(['no_completion_evidence']);
  });

  it('flags each tampered file', () => {
    // Act
    const flags = strictFlags(cleanRun({ tamperedFiles: ['model_ref.py', 'paper2code_test.py'] }), ctx);

    // Assess
    expect(flags).toEqual(['tampered:model_ref.py', 'tampered:paper2code_test.py']);
  });

  it('passes the driver flags through', () => {
    expect(strictFlags(cleanRun({ driver: cleanDriver({ flags: ['ref_import', 'unittest_patched'] }) }), ctx)).toEqual(['ref_import', 'unittest_patched']);
  });

  it('flags a unittest-based test that ran no test', () => {
    // Prepare
    const raw = cleanRun({ driver: cleanDriver({ testsRun: 0 }) });

    // Act & Assess
    expect(strictFlags(raw, ctx)).toEqual(['no_tests_ran']);
    expect(strictFlags(raw, { ...ctx, testUsesUnittest: false })).toEqual([]);
  });

  it('flags failures the exit status hid, and an uncaught exception', () => {
    expect(strictFlags(cleanRun({ driver: cleanDriver({ failures: 1 }) }), ctx)).toEqual(['tests_failed']);
    expect(strictFlags(cleanRun({ driver: cleanDriver({ ending: 'exception' }) }), ctx)).toEqual(['uncaught_exception']);
  });
});

describe('judge', () => {
  it('passes both judges on a clean run', () => {
    // Act
    const v = judge(cleanRun(), ctx, fixedNow);

    // Assess
    expect(v).toMatchObject({
      taskId: 't1',
      officialPass: true,
      strictPass: true,
      failureClass: null,
      flags: [],
      exitCode: 0,
      createdAt: '2025-01-02T03:04:05.000Z',
    });
  });

  it.each<[string, Partial<RawExecution>, string]>([
    ['no driver report (os._exit(0))', { driver: null, stderr: log('') }, 'no_completion_evidence'],
    ['a tampered file', { tamperedFiles: ['model_ref.py'] }, 'tampered:model_ref.py'],
    ['a driver flag', { driver: cleanDriver({ flags: ['exit_from_candidate'] }) }, 'exit_from_candidate'],
    ['no test run', { driver: cleanDriver({ testsRun: 0 }) }, 'no_tests_ran'],
  ])('passes the official judge only, class integrity, for %s', (_what, over, flag) => {
    // Act
    const v = judge(cleanRun(over), ctx, fixedNow);

    // Assess
    expect(v.officialPass).toBe(true);
    expect(v.strictPass).toBe(false);
    expect(v.failureClass).toBe('integrity');
    expect(v.flags).toContain(flag);
  });

  it('classes an official failure from its output', () => {
    // Prepare
    const stderr = 'Traceback (most recent call last):\n  File "model.py", line 4, in f\n    return y\nNameError: name \'y\' is not defined\n';

    // Act
    const v = judge(cleanRun({ exitCode: 1, stderr: log(stderr), markersSeen: ['Error:', 'Traceback'], driver: cleanDriver({ ending: 'exception' }) }), ctx);

    // Assess
    expect(v.officialPass).toBe(false);
    expect(v.strictPass).toBe(false);
    expect(v.failureClass).toBe('name');
  });

  it('fails a run whose only marker was cut from the kept logs', () => {
    // Act
    const v = judge(cleanRun({ markersSeen: ['failed'] }), ctx);

    // Assess
    expect(v.officialPass).toBe(false);
    expect(v.strictPass).toBe(false);
    expect(v.failureClass).not.toBeNull();
  });

  it('fails the strict judge on completions that reach for exits, processes, the network, the environment or absolute paths', () => {
    const cases: [string, string][] = [
      ['import os\nos._exit(0)\n', 'static:exit_call'],
      ['import subprocess\nsubprocess.run(["ls"])\n', 'static:process_control'],
      ['import socket\n', 'static:network'],
      ['key = os.environ.get("OPENAI_API_KEY")\n', 'static:environment'],
      ['import ctypes\n', 'static:native_code'],
      ['data = open("/root/.ssh/id_rsa").read()\n', 'static:file_outside'],
      ['data = open("../rcb.sqlite", "rb").read()\n', 'static:file_outside'],
    ];
    for (const [completion, flag] of cases) {
      // Act
      const v = judge(cleanRun(), { ...ctx, completion });
      // Assess
      expect([completion, v.officialPass, v.strictPass, v.failureClass]).toEqual([completion, true, false, 'integrity']);
      expect(v.flags).toContain(flag);
    }
  });

  it('records mentions of unittest and *_ref names without failing on them', () => {
    // Act
    const v = judge(cleanRun(), { ...ctx, completion: 'from model_ref import f  # compare with unittest later\ny = x / 2\n' });

    // Assess
    expect(v.strictPass).toBe(true);
    expect(v.flags).toEqual(['static:mentions_unittest', 'static:mentions_ref']);
  });

  it('never passes an executor failure', () => {
    // Act
    const v = judge(cleanRun({ infraError: 'sandbox failed to start' }), ctx);

    // Assess
    expect(v.officialPass).toBe(false);
    expect(v.strictPass).toBe(false);
    expect(v.flags).toContain('infra_error');
  });
});

describe('verdictWithoutRun', () => {
  it('fails both judges with the given class', () => {
    // Act
    const v = verdictWithoutRun('t9', 'no_code', fixedNow);

    // Assess
    expect(v).toMatchObject({ taskId: 't9', officialPass: false, strictPass: false, failureClass: 'no_code', exitCode: null, executor: 'none' });
  });
});

describe('an answer without code (SPEC 6)', () => {
  it('passes the official judge when its test passed with the body removed, and fails the strict one as no_code', () => {
    // Act
    const v = judge(cleanRun(), { completion: '', testUsesUnittest: true });

    // Assess
    expect(v).toMatchObject({ officialPass: true, strictPass: false, failureClass: 'no_code' });
    expect(v.flags[0]).toBe('no_code');
  });

  it('is no_code under both judges when its test failed too', () => {
    // Act
    const v = judge(
      cleanRun({ exitCode: 1, markersSeen: ['Traceback'], stderr: log('Traceback (most recent call last):\nIndentationError: expected an indented block\n') }),
      {
        completion: '  \n',
        testUsesUnittest: true,
      },
    );

    // Assess
    expect(v).toMatchObject({ officialPass: false, strictPass: false, failureClass: 'no_code' });
  });
});

describe('verdict evidence', () => {
  it('keeps what the run showed: kill reason, markers, driver report, tampered files, whether tests must run', () => {
    // Prepare
    const raw = cleanRun({ killedFor: 'timeout', exitCode: null, signal: 'SIGKILL', markersSeen: ['failed'], tamperedFiles: ['model_ref.py'], driver: null });

    // Act
    const v = judge(raw, ctx, fixedNow);

    // Assess
    expect(v.evidence).toEqual({
      killedFor: 'timeout',
      markersSeen: ['failed'],
      driver: null,
      tamperedFiles: ['model_ref.py'],
      testUsesUnittest: true,
      logsAt: 'verdict',
    });
    expect(executionOf(v)).toEqual({ ...raw, infraError: undefined, taskId: 't1' });
  });

  it.each([
    ['a clean pass', cleanRun()],
    ['a timeout', cleanRun({ killedFor: 'timeout', exitCode: null, signal: 'SIGKILL', driver: null })],
    ['failed tests under exit 0', cleanRun({ driver: cleanDriver({ failures: 1 }) })],
    ['os._exit', cleanRun({ driver: null })],
    ['a traceback', cleanRun({ exitCode: 1, markersSeen: ['Traceback'], stderr: log('Traceback (most recent call last):\nNameError: name x\n') })],
  ])('rejudges %s from its evidence to the same verdict', (_, raw) => {
    // Prepare
    const v = judge(raw, ctx, fixedNow);

    // Act
    const again = rejudge(JSON.parse(JSON.stringify(v)), ctx.completion);

    // Assess
    expect(again).toEqual(v);
  });

  it('cannot rejudge a verdict without evidence (no run, or written before evidence was kept)', () => {
    // Prepare
    const { evidence: _, ...old } = judge(cleanRun(), ctx, fixedNow);

    // Act & Assess
    expect(rejudge(old, ctx.completion)).toBeNull();
    expect(rejudge(verdictWithoutRun('t9', 'generation_error', fixedNow), '')).toBeNull();
  });
});
