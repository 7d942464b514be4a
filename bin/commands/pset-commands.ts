/** `rcb validate`, `rcb tasks`, `rcb prompt`: for pset authors. */
import { resolve } from 'node:path';
import { formatProblem, readPset } from '../../core/pset/read-pset';
import { buildPrompt } from '../../core/prompt/template';
import type { TaskListing } from '../../core/types';
import { findSnippet } from '../../core/prompt/mask';
import { unknownName } from '../../core/util/did-you-mean';
import { defaultPsetDir, loadPromptTemplate, loadPsetOrFail, parseList, UsageError } from './common';

export function validateCommand(opts: { pset?: string; papers?: string }): number {
  const root = resolve(opts.pset ?? defaultPsetDir());
  const { pset, problems } = readPset(root, { papers: parseList(opts.papers) });
  // A misspelt --papers is the flag's mistake, said as such; the pset's own problems as path:line.
  for (const p of problems) {
    const u = p.unknownPaper;
    process.stdout.write(`${u ? unknownName('--papers', 'paper', u.id, u.known, `in the pset at ${root}`) : formatProblem(p)}\n`);
  }
  const snippets = pset.papers.reduce((a, p) => a + p.snippets.length, 0);
  if (problems.length) {
    process.stderr.write(`${problems.length} problem(s) in ${root}\n`);
    return 1;
  }
  process.stderr.write(`${root}: ${pset.papers.length} paper(s), ${snippets} snippet(s), no problems\n`);
  return 0;
}

export function tasksCommand(opts: { pset?: string; papers?: string; json?: boolean }): number {
  const pset = loadPsetOrFail(opts.pset, parseList(opts.papers));
  const tasks: TaskListing[] = pset.papers.flatMap((p) =>
    p.snippets.map((s) => ({ paper: p.meta.id, file: s.file, snippet: s.name, loc: s.loc, parent: s.parent })),
  );
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(tasks, null, 2)}\n`);
    return 0;
  }
  process.stdout.write(formatTaskTable(tasks, process.stdout.isTTY ? process.stdout.columns : undefined));
  process.stderr.write(`${tasks.length} task(s), ${tasks.reduce((a, t) => a + t.loc, 0)} lines of code\n`);
  return 0;
}

/**
 * The task table: nesting shown by indenting a snippet under its enclosing one (instead of
 * a parent column that doubled the width: 214 columns on the public set), the wide column
 * last, and on a terminal each line cut to its width (`--json` and pipes keep every name whole).
 */
export function formatTaskTable(tasks: TaskListing[], columns?: number): string {
  const depth = new Map<string, number>();
  const key = (t: { paper: string; file: string }, name: string) => `${t.paper}\0${t.file}\0${name}`;
  const rows = tasks.map((t) => {
    const d = t.parent === null ? 0 : (depth.get(key(t, t.parent)) ?? 0) + 1;
    depth.set(key(t, t.snippet), d);
    return [t.paper, t.file, String(t.loc), `${'  '.repeat(d)}${t.snippet}`];
  });
  const header = ['paper', 'file', 'loc', 'snippet (nested ones indented)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => {
    const text = cells
      .map((c, i) => (i === 2 ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
    return columns && text.length > columns ? `${text.slice(0, columns - 1)}…` : text;
  };
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

export function promptCommand(paperId: string, snippetName: string, opts: { pset?: string; paper?: boolean; promptTemplate?: string }): number {
  const pset = loadPsetOrFail(opts.pset, [paperId], 'the <paper> argument');
  const paper = pset.papers[0];
  if (!paper.snippets.some((s) => s.name === snippetName)) {
    throw new UsageError(
      unknownName(
        'the <snippet> argument',
        'snippet',
        snippetName,
        paper.snippets.map((s) => s.name),
        `in paper "${paper.meta.id}"`,
      ),
    );
  }
  let snippet;
  try {
    snippet = findSnippet(paper, snippetName);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const template = loadPromptTemplate(opts.promptTemplate);
  try {
    process.stdout.write(buildPrompt(template, paper, snippet, opts.paper !== false).text);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return 0;
}
