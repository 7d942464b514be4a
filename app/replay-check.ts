/**
 * A replay line that names no task of the pset (a misspelt snippet, a wrong file) would
 * otherwise be ignored without a word, and its task would fail as a generation error that
 * hides the typo. Every such line is an error naming the file and line, with the nearest
 * names.
 */
import type { Pset } from '../core/types';
import { readReplayFile, readReplayText } from '../adapters/models/offline';
import { didYouMean } from '../core/util/did-you-mean';

/**
 * Problems as `FILE:LINE: message`. A paper outside the pset is a problem only when the
 * run takes the whole pset: with `--papers`, lines for the other papers are simply not used.
 */
export function replayProblems(path: string, pset: Pset, papersSelected: boolean): string[] {
  const parsed = readReplayFile(path);
  // readReplayFile skips blank lines; recover each answer's line number the same way.
  const lineNumbers: number[] = [];
  readReplayText(path)
    .split('\n')
    .forEach((text, i) => {
      if (text.trim() !== '') lineNumbers.push(i + 1);
    });
  const papers = new Map(pset.papers.map((p) => [p.meta.id, p]));
  const problems: string[] = [];
  parsed.forEach((l, k) => {
    const where = `${path}:${lineNumbers[k]}`;
    const paper = papers.get(l.paper);
    if (!paper) {
      if (!papersSelected) problems.push(`${where}: no paper "${l.paper}" in the pset${didYouMean(l.paper, [...papers.keys()])}`);
      return;
    }
    const snippets = paper.snippets.filter((s) => s.name === l.snippet);
    if (!snippets.length) {
      problems.push(
        `${where}: paper "${l.paper}" has no snippet "${l.snippet}"${didYouMean(
          l.snippet,
          paper.snippets.map((s) => s.name),
        )}`,
      );
    } else if (l.file !== undefined && !snippets.some((s) => s.file === l.file)) {
      problems.push(`${where}: snippet "${l.snippet}" of paper "${l.paper}" is in ${snippets.map((s) => s.file).join(', ')}, not in "${l.file}"`);
    }
  });
  return problems;
}
