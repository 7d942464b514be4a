/**
 * The masked view (SPEC 5) and the test view (SPEC 7) of an annotated file.
 */
import type { Paper, Snippet, SourceFile } from '../types';
import { isMarkerLine } from '../pset/markers';
import { joinLines } from '../pset/read-pset';

export function findFile(paper: Paper, path: string): SourceFile {
  const file = paper.annotatedFiles.find((f) => f.path === path);
  if (!file) throw new Error(`paper "${paper.meta.id}" has no annotated file ${path}`);
  return file;
}

export function findSnippet(paper: Paper, name: string, file?: string): Snippet {
  const matches = paper.snippets.filter((s) => s.name === name && (file === undefined || s.file === file));
  if (matches.length === 0) throw new Error(`paper "${paper.meta.id}" has no snippet "${name}"${file ? ` in ${file}` : ''}`);
  return matches[0];
}

/**
 * How the placeholder lines and the end of the masked file are written. `rcb`: "line" or
 * "lines" by count, the file's own final newline. `original`: what the original harness
 * sends (SPEC 5): "line(s)" for every count, each placeholder line followed by a blank line
 * (it wrote each with its own "\n" and then joined the lines with "\n"), and no final newline.
 */
export type MaskedFileForm = 'rcb' | 'original';

/**
 * SPEC 5 step 1-2: the snippet's lines, markers included, become two TODO comment lines
 * at the snippet's indentation; every other marker line is removed.
 */
export function maskedView(file: SourceFile, snippet: Snippet, form: MaskedFileForm = 'rcb'): string {
  const indent = ' '.repeat(snippet.bodyIndent);
  const original = form === 'original';
  const plural = original ? 'line(s)' : snippet.loc === 1 ? 'line' : 'lines';
  const out: string[] = [];
  file.lines.forEach((line, i) => {
    const lineNo = i + 1;
    if (lineNo === snippet.openLine) {
      out.push(`${indent}# TODO: Implement block "${snippet.name}"`);
      if (original) out.push('');
      out.push(`${indent}# Approximately ${snippet.loc} ${plural} of code.`);
      if (original) out.push('');
      return;
    }
    if (lineNo > snippet.openLine && lineNo <= snippet.closeLine) return;
    if (isMarkerLine(line)) return;
    out.push(line);
  });
  return joinLines({ lines: out, finalNewline: original ? false : file.finalNewline });
}

/** Split a completion into lines; a final newline ends the last line rather than adding an empty one. */
export function completionLines(completion: string): string[] {
  if (completion === '') return [];
  const text = completion.endsWith('\n') ? completion.slice(0, -1) : completion;
  return text.split(/\r?\n/);
}

/**
 * SPEC 7: the original file (markers kept) with the lines strictly between the snippet's
 * markers replaced by the completion, verbatim.
 */
export function splice(file: SourceFile, snippet: Snippet, completion: string): string {
  const lines = [...file.lines.slice(0, snippet.openLine), ...completionLines(completion), ...file.lines.slice(snippet.closeLine - 1)];
  return joinLines({ lines, finalNewline: file.finalNewline });
}

/** The snippet's original body, as the oracle answers it. */
export function originalBody(snippet: Snippet): string {
  return snippet.body.length ? `${snippet.body.join('\n')}\n` : '';
}
