/**
 * Snippet markers (SPEC 3) and lines of code (SPEC 4). Pure functions over a file's lines.
 */
import type { PsetProblem, Snippet } from '../types';

export const OPEN_MARKER = /^\s*#\s*<paper2code\s+name="([^"]+)">\s*$/;
export const CLOSE_MARKER = /^\s*#\s*<\/paper2code\s+name="([^"]+)">\s*$/;

/** True when the line is an open or close marker. */
export function isMarkerLine(line: string): boolean {
  return OPEN_MARKER.test(line) || CLOSE_MARKER.test(line);
}

/**
 * SPEC 4: a line counts when, stripped, it is non-empty, does not start with `#`, and the
 * text before its first `#` is not blank. The rule is textual on purpose (a `#` inside a
 * string is treated the same way) so that counts match the published ones.
 */
export function isCodeLine(line: string): boolean {
  const stripped = line.trim();
  if (stripped === '' || stripped.startsWith('#')) return false;
  const hash = stripped.indexOf('#');
  return hash < 0 || stripped.slice(0, hash).trim() !== '';
}

export function countLoc(lines: readonly string[]): number {
  let n = 0;
  for (const line of lines) if (isCodeLine(line)) n++;
  return n;
}

function leadingWhitespace(line: string): string {
  return /^[ \t]*/.exec(line)![0];
}

/** SPEC 5: smallest count of leading spaces/tabs over the non-blank lines. */
export function minIndent(lines: readonly string[]): number {
  let min = Infinity;
  for (const line of lines) {
    if (line.trim() === '') continue;
    min = Math.min(min, leadingWhitespace(line).length);
  }
  return min === Infinity ? 0 : min;
}

export interface ParsedFile {
  snippets: Snippet[];
  problems: PsetProblem[];
}

/**
 * Find the snippets of one annotated file. `displayPath` is used in problems; `paper` and
 * `file` go into the snippets. Every problem is reported, not only the first.
 */
export function parseSnippets(lines: readonly string[], paper: string, file: string, displayPath: string): ParsedFile {
  const problems: PsetProblem[] = [];
  const snippets: Snippet[] = [];
  const stack: { name: string; line: number; indent: string }[] = [];
  const seen = new Map<string, number>();
  const problem = (line: number, message: string) => problems.push({ path: displayPath, line, message });

  lines.forEach((text, i) => {
    const lineNo = i + 1;
    const open = OPEN_MARKER.exec(text);
    if (open) {
      const name = open[1];
      const first = seen.get(name);
      if (first !== undefined) problem(lineNo, `duplicate snippet name "${name}" (first opened at line ${first})`);
      else seen.set(name, lineNo);
      stack.push({ name, line: lineNo, indent: leadingWhitespace(text) });
      return;
    }
    const close = CLOSE_MARKER.exec(text);
    if (!close) return;
    const name = close[1];
    const top = stack[stack.length - 1];
    if (!top) {
      problem(lineNo, `close marker for "${name}" with no snippet open`);
      return;
    }
    if (top.name !== name) {
      // Recover when the name is open further down the stack (an inner snippet was left
      // unclosed), so that one mistake does not cascade into a report per later marker.
      const depth = stack.map((s) => s.name).lastIndexOf(name);
      problem(lineNo, `close marker for "${name}" but the innermost open snippet is "${top.name}" (opened at line ${top.line})`);
      if (depth < 0) return;
      for (const unclosed of stack.splice(depth + 1)) {
        problem(unclosed.line, `snippet "${unclosed.name}" is never closed`);
      }
    }
    const opened = stack.pop()!;
    const indent = leadingWhitespace(text);
    if (indent !== opened.indent) {
      problem(lineNo, `close marker for "${name}" is indented differently from its open marker at line ${opened.line}`);
    }
    const body = lines.slice(opened.line, lineNo - 1);
    const loc = countLoc(body);
    if (loc === 0) problem(opened.line, `snippet "${name}" has no code lines`);
    snippets.push({
      paper,
      file,
      name,
      openLine: opened.line,
      closeLine: lineNo,
      markerIndent: opened.indent,
      bodyIndent: minIndent(body),
      body,
      loc,
      parent: stack.length ? stack[stack.length - 1].name : null,
    });
  });
  for (const unclosed of stack) problem(unclosed.line, `snippet "${unclosed.name}" is never closed`);
  snippets.sort((a, b) => a.openLine - b.openLine);
  return { snippets, problems };
}
