/** `rcb validate`, `rcb tasks`, `rcb prompt`: for pset authors. */
import { resolve } from 'node:path';
import { formatProblem, readPset } from '../../core/pset/read-pset';
import { buildPrompt } from '../../core/prompt/template';
import type { TaskListing } from '../../core/types';
import { findSnippet } from '../../core/prompt/mask';
import { defaultPsetDir, loadPromptTemplate, loadPsetOrFail, parseList, UsageError } from './common';

export function validateCommand(opts: { pset?: string; papers?: string }): number {
  const root = resolve(opts.pset ?? defaultPsetDir());
  const { pset, problems } = readPset(root, { papers: parseList(opts.papers) });
  for (const p of problems) process.stdout.write(`${formatProblem(p)}\n`);
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
    process.stdout.write(JSON.stringify(tasks, null, 2) + '\n');
    return 0;
  }
  const w = (k: keyof TaskListing) => Math.max(k.length, ...tasks.map((t) => String(t[k] ?? '-').length));
  const cols: (keyof TaskListing)[] = ['paper', 'file', 'snippet', 'loc', 'parent'];
  const widths = cols.map(w);
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  process.stdout.write(line(cols) + '\n');
  for (const t of tasks) process.stdout.write(line(cols.map((c) => String(t[c] ?? '-'))) + '\n');
  process.stderr.write(`${tasks.length} task(s), ${tasks.reduce((a, t) => a + t.loc, 0)} lines of code\n`);
  return 0;
}

export function promptCommand(paperId: string, snippetName: string, opts: { pset?: string; paper?: boolean; promptTemplate?: string }): number {
  const pset = loadPsetOrFail(opts.pset, [paperId]);
  const paper = pset.papers[0];
  let snippet;
  try {
    snippet = findSnippet(paper, snippetName);
  } catch (e) {
    const names = paper.snippets.map((s) => `"${s.name}"`).join(', ');
    throw new UsageError(`${(e as Error).message}; its snippets: ${names}`);
  }
  const template = loadPromptTemplate(opts.promptTemplate);
  try {
    process.stdout.write(buildPrompt(template, paper, snippet, opts.paper !== false).text);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return 0;
}
