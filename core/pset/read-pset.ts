/**
 * Read and validate a pset (SPEC 1-4): papers.yaml, each paper's folder, its annotated and
 * context files, and their snippets. Problems are collected, never thrown one at a time,
 * so `rcb validate` can print them all as `path:line: message`.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isMap, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Paper, PaperMeta, Pset, PsetProblem, SourceFile } from '../types';
import { parseSnippets, readMarkerLine } from './markers';
import { didYouMean } from '../util/did-you-mean';
import { yamlData } from '../limits';
import { isSymlink, paperIdProblem, relativePathProblem, specialEntries, UNDIGESTED_FOLDERS } from './pset-paths';

export const PAPER_TEXT_FILES = ['paper2code_paper.tex', 'paper2code_paper.md'] as const;
export const TEST_ENTRY = 'paper2code_test.py';
const KNOWN_KEYS = new Set([
  'id',
  'title',
  'venue',
  'github_url',
  'arxiv_abs',
  'arxiv_date',
  'arxiv_v1_date',
  'first_commit_date',
  'last_commit_date',
  'annotated_file_paths',
  'context_file_paths',
]);
const DATE_KEYS = ['arxiv_date', 'arxiv_v1_date', 'first_commit_date', 'last_commit_date'] as const;
const TEXT_KEYS = ['title', 'venue', 'github_url', 'arxiv_abs'] as const;

export interface ReadPsetOptions {
  /** Only these papers (ids); unknown ids are problems. */
  papers?: string[] | null;
  /** How paths are shown in problems: relative to this folder (default: process.cwd()). */
  displayBase?: string;
}

export interface ReadPsetResult {
  /** The pset; papers with problems are left out of it. */
  pset: Pset;
  problems: PsetProblem[];
}

/** Thrown by `loadPset` when a pset has problems; carries them all. */
export class PsetError extends Error {
  constructor(readonly problems: PsetProblem[]) {
    super(`invalid pset:\n${problems.map(formatProblem).join('\n')}`);
    this.name = 'PsetError';
  }
}

export function formatProblem(p: PsetProblem): string {
  return `${p.path}:${p.line}: ${p.message}`;
}

/** Read a pset and fail with every problem if there is any. */
export function loadPset(root: string, options: ReadPsetOptions = {}): Pset {
  const { pset, problems } = readPset(root, options);
  if (problems.length) throw new PsetError(problems);
  return pset;
}

/** Calendar date of a YAML scalar: a `YYYY-MM-DD` string or a Date (YAML 1.1 timestamps). */
function asDate(value: unknown): string | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  if (value instanceof Date) return value.toISOString().slice(0, 10);
  const text = String(value).trim();
  const m = /^(\d{4}-\d{2}-\d{2})/.exec(text);
  return m ? m[1] : text;
}

function asPathList(value: unknown): string[] | null {
  if (value === null || value === undefined) return [];
  if (typeof value === 'string') return value.trim() ? [value.trim()] : [];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
    return value.map((v) => v.trim()).filter((v) => v !== '');
  }
  return null;
}

export function splitLines(text: string): { lines: string[]; finalNewline: boolean } {
  const finalNewline = text.endsWith('\n');
  const body = finalNewline ? text.slice(0, text.endsWith('\r\n') ? -2 : -1) : text;
  return { lines: body === '' && finalNewline ? [''] : body.split(/\r?\n/), finalNewline };
}

export function joinLines(file: { lines: readonly string[]; finalNewline: boolean }): string {
  return file.lines.join('\n') + (file.finalNewline ? '\n' : '');
}

export function readPset(root: string, options: ReadPsetOptions = {}): ReadPsetResult {
  const base = options.displayBase ?? process.cwd();
  const show = (abs: string) => {
    const rel = relative(base, abs);
    return rel && !rel.startsWith('..') ? rel : abs;
  };
  const problems: PsetProblem[] = [];
  const papers: Paper[] = [];
  const indexPath = join(root, 'papers.yaml');
  const empty = (): ReadPsetResult => ({ pset: { root, digest: '', papers: [] }, problems });

  if (!existsSync(root) || !statSync(root).isDirectory()) {
    // Not a pset with a missing index: nothing is there at all (a typo in --pset, usually).
    problems.push({ path: show(root), line: 0, message: existsSync(root) ? 'the pset is not a folder' : 'the pset folder does not exist' });
    return empty();
  }
  if (!existsSync(indexPath)) {
    problems.push({ path: show(indexPath), line: 0, message: 'papers.yaml is missing' });
    return empty();
  }
  if (isSymlink(indexPath) || !statSync(indexPath).isFile()) {
    problems.push({ path: show(indexPath), line: 0, message: 'papers.yaml must be a regular file of the pset, not a symlink or a folder' });
    return empty();
  }
  const indexText = readFileSync(indexPath, 'utf8');
  const lineCounter = new LineCounter();
  const doc = parseDocument(indexText, { lineCounter, prettyErrors: false });
  for (const err of doc.errors) {
    problems.push({ path: show(indexPath), line: lineCounter.linePos(err.pos[0]).line, message: `YAML: ${err.message.split('\n')[0]}` });
  }
  if (doc.errors.length) return empty();
  const data = yamlData(doc);
  if ('error' in data) {
    problems.push({ path: show(indexPath), line: 1, message: data.error });
    return empty();
  }
  if (!isSeq(doc.contents)) {
    problems.push({ path: show(indexPath), line: 1, message: 'papers.yaml must be a list of papers' });
    return empty();
  }

  const wanted = options.papers ? new Set(options.papers) : null;
  const found = new Set<string>();
  const ids = new Map<string, number>();
  for (const item of doc.contents.items) {
    const line = item && typeof item === 'object' && 'range' in item && item.range ? lineCounter.linePos(item.range[0]).line : 0;
    const at = (message: string) => problems.push({ path: show(indexPath), line, message });
    if (!isMap(item)) {
      at('each paper must be a mapping with at least id and annotated_file_paths');
      continue;
    }
    const entry = item.toJSON() as Record<string, unknown>;
    const id = typeof entry.id === 'string' || typeof entry.id === 'number' ? String(entry.id).trim() : '';
    if (!id) {
      at('paper entry has no id');
      continue;
    }
    if (ids.has(id)) {
      at(`duplicate paper id "${id}" (first at line ${ids.get(id)})`);
      continue;
    }
    ids.set(id, line);
    const badId = paperIdProblem(id);
    if (badId) {
      at(badId);
      continue;
    }
    if (wanted && !wanted.has(id)) continue;
    found.add(id);
    const before = problems.length;
    const paper = readPaper(root, id, entry, line, show(indexPath), show, problems);
    if (paper && problems.length === before) papers.push(paper);
  }
  if (wanted) {
    for (const id of wanted) {
      if (found.has(id)) continue;
      problems.push({
        path: show(indexPath),
        line: 0,
        message: `paper "${id}" is not in papers.yaml${didYouMean(id, ids.keys())} (its papers: ${[...ids.keys()].sort().join(', ')})`,
        unknownPaper: { id, known: [...ids.keys()] },
      });
    }
  }
  return { pset: { root, digest: digestPapers(papers), papers }, problems };
}

function readPaper(
  root: string,
  id: string,
  entry: Record<string, unknown>,
  line: number,
  indexDisplay: string,
  show: (abs: string) => string,
  problems: PsetProblem[],
): Paper | null {
  const at = (message: string) => problems.push({ path: indexDisplay, line, message: `paper "${id}": ${message}` });
  const annotated = asPathList(entry.annotated_file_paths);
  const context = asPathList(entry.context_file_paths);
  if (annotated === null) at('annotated_file_paths must be a string or a list of strings');
  else if (annotated.length === 0) at('annotated_file_paths is empty');
  if (context === null) at('context_file_paths must be null, a string or a list of strings');
  if (!annotated || !annotated.length || context === null) return null;
  for (const [role, list] of [
    ['annotated_file_paths', annotated],
    ['context_file_paths', context],
  ] as const) {
    const twice = list.filter((p, i) => list.indexOf(p) !== i);
    if (twice.length) at(`${role} lists ${[...new Set(twice)].join(', ')} more than once`);
    for (const path of list) {
      const why = relativePathProblem(path);
      if (why) at(`${role} ${JSON.stringify(path)} ${why}`);
    }
  }
  if (![...annotated, ...context].every((p) => relativePathProblem(p) === null)) return null;

  const dir = join(root, id);
  if (isSymlink(dir)) {
    at(`paper folder ${show(dir)} is a symlink; a pset's files must be its own`);
    return null;
  }
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    at(`paper folder ${show(dir)} is missing`);
    return null;
  }
  const special = specialEntries(dir);
  for (const s of special) at(`${show(join(dir, s.rel))} is ${s.what}; a pset's files must be its own (see docs/security.md)`);
  if (special.length) return null;
  const paperTextFile = PAPER_TEXT_FILES.find((f) => existsSync(join(dir, f)));
  if (!paperTextFile) at(`paper text ${show(join(dir, PAPER_TEXT_FILES[0]))} (or .md) is missing`);
  if (!existsSync(join(dir, TEST_ENTRY))) at(`test entry point ${show(join(dir, TEST_ENTRY))} is missing`);

  const readSource = (path: string, role: string): SourceFile | null => {
    const abs = join(dir, path);
    if (relative(dir, abs).startsWith('..')) {
      at(`${role} ${path} points outside the paper folder`);
      return null;
    }
    if (!existsSync(abs) || !statSync(abs).isFile()) {
      at(`${role} ${show(abs)} is missing`);
      return null;
    }
    return { path, ...splitLines(readFileSync(abs, 'utf8')) };
  };
  const annotatedFiles = annotated.map((p) => readSource(p, 'annotated file')).filter((f): f is SourceFile => !!f);
  const contextFiles = context.map((p) => readSource(p, 'context file')).filter((f): f is SourceFile => !!f);

  // Context files are shown to the model whole: a marker there would reach every prompt of the paper.
  for (const file of contextFiles) {
    if (annotated.includes(file.path)) continue;
    file.lines.forEach((text, i) => {
      if (readMarkerLine(text)) {
        problems.push({
          path: show(join(dir, file.path)),
          line: i + 1,
          message: 'snippet marker in a context file: context files are shown whole, so it would reach the prompt (markers belong in annotated files)',
        });
      }
    });
  }
  const snippets = [];
  const names = new Map<string, string>();
  for (const file of annotatedFiles) {
    const parsed = parseSnippets(file.lines, id, file.path, show(join(dir, file.path)));
    problems.push(...parsed.problems);
    for (const s of parsed.snippets) {
      // The public set keeps names unique across a paper's files; tasks are addressed by
      // (paper, snippet) on the command line and in replay files, so require it.
      const other = names.get(s.name);
      if (other && other !== file.path) {
        problems.push({ path: show(join(dir, file.path)), line: s.openLine, message: `duplicate snippet name "${s.name}" (also in ${other})` });
      }
      names.set(s.name, file.path);
    }
    snippets.push(...parsed.snippets);
  }
  if (!paperTextFile) return null;
  if (annotatedFiles.length && snippets.length === 0) at('no snippets in the annotated files');

  const meta: PaperMeta = { id, annotated_file_paths: annotated, context_file_paths: context, extra: {} };
  for (const key of TEXT_KEYS) if (entry[key] !== undefined && entry[key] !== null) meta[key] = String(entry[key]);
  for (const key of DATE_KEYS) {
    const d = asDate(entry[key]);
    if (d !== undefined) {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(d)) at(`${key} "${d}" is not a YYYY-MM-DD date`);
      meta[key] = d;
    }
  }
  for (const [k, v] of Object.entries(entry)) if (!KNOWN_KEYS.has(k)) meta.extra[k] = v;
  return { meta, digest: digestPaper(dir, meta), dir, paperTextFile, annotatedFiles, contextFiles, snippets };
}

/**
 * Code-unit order, not localeCompare: the locale differs between machines (a laptop, Lambda,
 * the container), and a digest that followed it would change task ids from one to the other.
 */
function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => byCodeUnit(a.name, b.name))) {
    if (UNDIGESTED_FOLDERS.has(entry.name)) continue;
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...listFiles(join(dir, entry.name), rel));
    else if (entry.isFile()) out.push(rel);
  }
  return out;
}

/** Content digest of a paper: its normalised entry and the bytes of every file of its folder. */
function digestPaper(dir: string, meta: PaperMeta): string {
  const h = createHash('sha256');
  h.update(JSON.stringify(meta)).update('\0');
  for (const rel of listFiles(dir))
    h.update(`${rel}\0`)
      .update(readFileSync(join(dir, rel)))
      .update('\0');
  return h.digest('hex');
}

function digestPapers(papers: Paper[]): string {
  const h = createHash('sha256');
  for (const p of [...papers].sort((a, b) => byCodeUnit(a.meta.id, b.meta.id))) h.update(`${p.meta.id}:${p.digest}\n`);
  return h.digest('hex');
}

/** Read a paper's text (kept off the Paper record: it can be large and is needed only for prompts). */
export function readPaperText(paper: Paper): string {
  return readFileSync(join(paper.dir, paper.paperTextFile), 'utf8');
}
