/**
 * Snippet markers (SPEC 3) and lines of code (SPEC 4). Pure functions over a file's lines.
 */
import type { PsetProblem, Snippet } from '../types';
import { editDistance } from '../util/closest-names';

export const OPEN_MARKER = /^\s*#\s*<paper2code\s+name="([^"]+)">\s*$/;
export const CLOSE_MARKER = /^\s*#\s*<\/paper2code\s+name="([^"]+)">\s*$/;

const TAG = 'paper2code';
const EXPECTED = 'expected a whole comment line `# <paper2code name="NAME">` or `# </paper2code name="NAME">`';

/**
 * A line as the one marker grammar reads it (SPEC 3), for the pset reader, `rcb validate`
 * and the masked view alike: a well-formed open or close marker; a line that looks like a
 * marker but is not one (what is wrong with it, and what it was meant to be when that can be
 * told, so one typo does not cascade into a report per later marker); or null, ordinary code.
 */
export type MarkerLine =
  | { kind: 'open' | 'close'; name: string }
  | { kind: 'malformed'; problem: string; meant: { kind: 'open' | 'close'; name: string } | null };

/** A word within two edits of `paper2code` (any case): the tag, or a misspelling of it. */
function tagLike(word: string): boolean {
  if (word.length < 7 || word.length > 13) return false;
  let known = TAG_LIKE.get(word);
  if (known === undefined) {
    known = editDistance(word.toLowerCase(), TAG) <= 2;
    // Code repeats its words: remember them (bounded, in case of a huge generated file).
    if (TAG_LIKE.size > 50_000) TAG_LIKE.clear();
    TAG_LIKE.set(word, known);
  }
  return known;
}
const TAG_LIKE = new Map<string, boolean>();

/**
 * True when a line that is not a marker still looks like one: a word within two edits of
 * `paper2code` with marker punctuation (`<`, `>`, `=`) or `name` beside it. Python names
 * that merely contain the word (`fractalar_in64_paper2code`) are words of their own.
 */
export function looksLikeMarker(line: string): boolean {
  if (!/[<>=]|name/i.test(line)) return false;
  return tagWord(line) !== undefined;
}

/**
 * The text of a marker-like line that stands for the tag: a word within two edits of
 * `paper2code`; a run of non-blank characters that is (`pape<2code`, `paper-2code`, after
 * any leading `#`, `<`, `/`); or a word glued to the tag after a `<` (`<paper2codename=`).
 */
function tagWord(line: string): string | undefined {
  const spaced = tagAfterLt(line);
  if (spaced && /\s/.test(spaced) && tagLike(spaced.replace(/\s/g, ''))) return spaced;
  const glued = /<\s*\/?\s*([A-Za-z0-9_]+)/.exec(line);
  if (glued && glued[1].length > 10 && editDistance(glued[1].slice(0, 10).toLowerCase(), TAG) <= 1) return glued[1];
  const word = (line.match(/[A-Za-z0-9_]+/g) ?? []).find(tagLike);
  if (word) return word;
  return line
    .split(/\s+/)
    .map((chunk) => chunk.replace(/^[#</]+/, ''))
    .find((chunk) => /[A-Za-z]/.test(chunk) && tagLike(chunk));
}

/**
 * The tag as written after the line's first `<` (and `/`): up to `name`, a quote, `=`, `>`,
 * or another attribute; blanks inside kept (`paper code`), around it trimmed.
 */
function tagAfterLt(line: string): string | null {
  const lt = /<\s*\/?/.exec(line);
  if (!lt) return null;
  const after = line.slice(lt.index + lt[0].length);
  return /^(.*?)(?=name|[>"'=]|\s+[A-Za-z_][\w-]*\s*=|$)/.exec(after)![1].trim() || null;
}

/** What is wrong with a marker-like line, first thing first. */
function diagnose(line: string): string {
  const hash = line.indexOf('#');
  const lt = line.indexOf('<');
  const tagAt = tagWord(line)!;
  const tagIndex = line.indexOf(tagAt);
  if (hash < 0 || (lt >= 0 && lt < hash) || (lt < 0 && tagIndex < hash)) return 'the marker is not a comment: it needs `#` before the tag';
  if (line.slice(0, hash).trim() !== '') return 'marker text after code: a marker must be a whole comment line';
  const afterHash = line.slice(hash + 1);
  const lead = /^\s*<\s*(\/?)\s*/.exec(afterHash);
  if (!lead) return 'the tag has no `<` before it';
  const written = tagAfterLt(afterHash) ?? '';
  const tag = [lead[0] + written, lead[1], written];
  if (/\s/.test(written) && written.replace(/\s/g, '') === TAG) return 'no space inside the tag: `<paper2code` or `</paper2code`';
  if (tag[2].length > TAG.length && tag[2].startsWith(TAG)) return `no space between the tag and name="NAME" ("${tag[2]}")`;
  if (tag[2] !== TAG) return `misspelt tag "<${tag[1]}${tag[2]}": the tag is "<${tag[1]}${TAG}"`;
  if (/<\s+\/|<\/\s+|<\s+p/.test(afterHash)) return 'no space inside the tag: `<paper2code` or `</paper2code`';
  const rest = afterHash.slice(tag[0].length);
  const attrs = [...rest.matchAll(/([A-Za-z_][A-Za-z0-9_-]*)\s*=/g)].map((m) => m[1]);
  const unknown = attrs.filter((a) => a !== 'name');
  if (unknown.length) return `unknown attribute${unknown.length > 1 ? 's' : ''} ${unknown.map((a) => `"${a}"`).join(', ')}: the only one is name="NAME"`;
  if (!attrs.length) return 'no name="NAME" attribute';
  if (attrs.length > 1) return 'name="NAME" given more than once';
  if (!/^\s/.test(rest)) return 'no space between the tag and name="NAME"';
  if (/name\s+=|name=\s+/.test(rest)) return 'no space around `=` in name="NAME"';
  const value = /name=(.*)$/.exec(rest)![1];
  if (value.startsWith("'")) return 'the name must be in double quotes';
  if (!value.startsWith('"')) return 'the name must be in double quotes (name="NAME")';
  const close = value.indexOf('"', 1);
  if (close < 0) return "the name's closing quote is missing";
  if (close === 1) return 'the name is empty';
  const tail = value.slice(close + 1);
  if (!tail.trimStart().startsWith('>'))
    return tail.trim() === '' ? 'the tag is not closed with `>`' : `unexpected text ${JSON.stringify(tail.trim())} before the tag's \`>\``;
  if (/^\s+>/.test(tail)) return "no space before the tag's `>`";
  return `text after the marker: ${JSON.stringify(tail.trimStart().slice(1).trim())}`;
}

/** The marker a malformed line was meant to be, where its kind and name can be read. */
function meantMarker(line: string): { kind: 'open' | 'close'; name: string } | null {
  const name = /name\s*=\s*["']?([^"'>]+)["']?/i.exec(line) ?? /["']([^"']+)["']/.exec(line);
  if (!name || !name[1].trim()) return null;
  const word = tagWord(line)!;
  const before = line.slice(0, line.indexOf(word));
  return { kind: /\/\s*$/.test(before) || /<\s*\//.test(before) ? 'close' : 'open', name: name[1].trim() };
}

export function readMarkerLine(line: string): MarkerLine | null {
  const open = OPEN_MARKER.exec(line);
  if (open) return { kind: 'open', name: open[1] };
  const close = CLOSE_MARKER.exec(line);
  if (close) return { kind: 'close', name: close[1] };
  if (!looksLikeMarker(line)) return null;
  return {
    kind: 'malformed',
    problem: `malformed marker: ${diagnose(line)}; ${EXPECTED} (as it is, the line is no marker and would reach the prompt)`,
    meant: meantMarker(line),
  };
}

/** True when the line is a well-formed open or close marker (the masked view removes exactly these). */
export function isMarkerLine(line: string): boolean {
  const m = readMarkerLine(line);
  return !!m && m.kind !== 'malformed';
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
  // A malformed marker whose kind and name can be read stands in the nesting (so its partner
  // is not reported again), but makes no snippet: it was reported at its own line.
  const stack: { name: string; line: number; indent: string; malformed: boolean }[] = [];
  const seen = new Map<string, number>();
  const problem = (line: number, message: string) => problems.push({ path: displayPath, line, message });

  lines.forEach((text, i) => {
    const lineNo = i + 1;
    const marker = readMarkerLine(text);
    if (!marker) return;
    let kind: 'open' | 'close';
    let name: string;
    let malformed = false;
    if (marker.kind === 'malformed') {
      problem(lineNo, marker.problem);
      if (!marker.meant) return;
      ({ kind, name } = marker.meant);
      malformed = true;
    } else ({ kind, name } = marker);
    if (kind === 'open') {
      const first = seen.get(name);
      if (first !== undefined) problem(lineNo, `duplicate snippet name "${name}" (first opened at line ${first})`);
      else seen.set(name, lineNo);
      stack.push({ name, line: lineNo, indent: leadingWhitespace(text), malformed });
      return;
    }
    const top = stack[stack.length - 1];
    if (!top) {
      if (!malformed) problem(lineNo, `close marker for "${name}" with no snippet open`);
      return;
    }
    if (top.name !== name) {
      // Recover when the name is open further down the stack (an inner snippet was left
      // unclosed), so that one mistake does not cascade into a report per later marker.
      const depth = stack.map((s) => s.name).lastIndexOf(name);
      if (!malformed || depth >= 0) problem(lineNo, `close marker for "${name}" but the innermost open snippet is "${top.name}" (opened at line ${top.line})`);
      if (depth < 0) return;
      for (const unclosed of stack.splice(depth + 1)) {
        problem(unclosed.line, `snippet "${unclosed.name}" is never closed`);
      }
    }
    const opened = stack.pop()!;
    if (malformed || opened.malformed) return;
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
