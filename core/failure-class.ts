/**
 * Deterministic failure classes (SPEC 10), read from what the test printed and how it
 * ended. The paper classified with a language model; this is cheaper and reproducible.
 */
import type { FailureClass } from './types';

const BY_EXCEPTION: Record<string, FailureClass> = {
  SyntaxError: 'syntax',
  IndentationError: 'syntax',
  TabError: 'syntax',
  NameError: 'name',
  UnboundLocalError: 'name',
  TypeError: 'type',
  AttributeError: 'attribute',
  IndexError: 'index_key',
  KeyError: 'index_key',
  ImportError: 'import',
  ModuleNotFoundError: 'import',
  AssertionError: 'functional',
  MemoryError: 'resource',
};

const TRACEBACK_HEADER = 'Traceback (most recent call last):';
/** An exception line: an unindented dotted name, optionally followed by `: message`. */
const EXCEPTION_LINE = /^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration|error|exception))(?::\s|:$|$)/;
/**
 * Any dotted name, optionally followed by `: message`. Python prints a traceback's frames
 * indented and its exception unindented, so right after a traceback header the first
 * unindented line names the exception whatever the class is called (`model.Boom: no`).
 */
const ANY_EXCEPTION_LINE = /^([A-Za-z_][\w.]*)(?::\s|:$|$)/;
/** What Python prints for a syntax error in the main script itself (no traceback header). */
const BARE_SYNTAX = /^(SyntaxError|IndentationError|TabError): /m;

/** Name of the exception that ended the last traceback in `text`, or null. */
export function lastException(text: string): string | null {
  const start = text.lastIndexOf(TRACEBACK_HEADER);
  const tail = start >= 0 ? text.slice(start + TRACEBACK_HEADER.length) : text;
  let found: string | null = null;
  let firstUnindented = true;
  for (const line of tail.split('\n')) {
    let m = EXCEPTION_LINE.exec(line);
    if (start >= 0 && firstUnindented && line.trim() !== '' && !/^\s/.test(line)) {
      firstUnindented = false;
      m ??= ANY_EXCEPTION_LINE.exec(line);
    }
    if (m) {
      found = m[1];
      // The first unindented exception line after the header ends that traceback.
      if (start >= 0) break;
    }
  }
  if (!found && start < 0) {
    const bare = BARE_SYNTAX.exec(text);
    if (bare) found = bare[1];
  }
  return found;
}

export interface ClassifyInput {
  completionEmpty: boolean;
  killedFor: 'timeout' | 'output' | 'disk' | null;
  signal: string | null;
  exitCode: number | null;
  /** stderr then stdout, as kept. */
  stderr: string;
  stdout: string;
}

const RESOURCE_SIGNALS = new Set(['SIGKILL', 'SIGXFSZ', 'SIGXCPU', 'SIGSEGV', 'SIGBUS', 'SIGABRT']);

export function classifyFailure(input: ClassifyInput): FailureClass {
  if (input.completionEmpty) return 'no_code';
  if (input.killedFor === 'timeout') return 'timeout';
  if (input.killedFor === 'output' || input.killedFor === 'disk') return 'resource';
  // Tracebacks go to stderr; a test that prints its own on stdout is read second.
  const name = lastException(input.stderr) ?? lastException(input.stdout);
  if (name) {
    const short = name.split('.').pop()!;
    if (BY_EXCEPTION[short]) return BY_EXCEPTION[short];
    if (/^(BlockingIOError|OSError)$/.test(short) && /Resource temporarily unavailable|Cannot allocate memory/.test(input.stderr)) {
      return 'resource';
    }
    return 'runtime';
  }
  if (input.signal && RESOURCE_SIGNALS.has(input.signal)) return 'resource';
  if (/^FAIL: /m.test(input.stderr) || /^FAIL: /m.test(input.stdout)) return 'functional';
  if (/^ERROR: /m.test(input.stderr)) return 'runtime';
  // Exit status alone (or an error marker without a traceback): the test judged the values wrong.
  return 'functional';
}
