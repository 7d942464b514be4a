/**
 * Prompt templates. A template file holds a with-paper form and a without-paper form, each
 * after a line `%%% with-paper %%%` or `%%% without-paper %%%`. Placeholders:
 *
 *   {{paper_text}}     the paper's full text (paper2code_paper.tex or .md)
 *   {{paper_id}}       the paper's id;  {{paper_title}} its title (or id)
 *   {{context_files}}  each context file in full, as `File: PATH`, a fence, the text, a
 *                      closing fence and a blank line; empty when the paper has none
 *   {{file_path}}      the annotated file's path, relative to the paper folder
 *   {{masked_file}}    the masked view of that file (SPEC 5), ending with a newline
 *   {{snippet}}        the snippet's name;  {{loc}} its lines of code
 *
 * Two placeholders take a form after a colon, so that the original harness's prompt can be
 * written as a template byte for byte (resources/prompt-template.txt) next to rcb's own:
 *
 *   {{context_files:original}}  each context file as `## PATH`, a blank line, the file's
 *                      lines glued together without newlines, and two newlines (the
 *                      original's defect, kept because published scores were measured with it)
 *   {{masked_file:original}}    "line(s)" for every count, a blank line after each of the two
 *                      placeholder lines, and no final newline
 *   `:rcb` names the default form of either.
 *
 * Everything before the first task placeholder (file_path, masked_file, snippet, loc) is the
 * same for all of a paper's tasks: that prefix is what providers can cache.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Prompt } from '../model';
import type { Paper, Snippet } from '../types';
import { findFile, maskedView } from './mask';
import { readPaperText } from '../pset/read-pset';

export interface PromptTemplate {
  /** Where it was read from, for messages. */
  source: string;
  withPaper: string | null;
  withoutPaper: string | null;
  /** sha256 of the file's bytes: part of every task id. */
  digest: string;
  /** The file's text, as read (what a cloud run uploads). */
  text: string;
}

const SECTION = /^%%% (with-paper|without-paper) %%%$/;
const PLACEHOLDER = /\{\{(\w+)(?::(\w+))?\}\}/g;
/** The placeholders that take a form (`{{name:form}}`), and the forms each knows. */
const FORMS: Record<string, readonly string[]> = { context_files: ['rcb', 'original'], masked_file: ['rcb', 'original'] };
const PAPER_LEVEL = new Set(['paper_text', 'paper_id', 'paper_title', 'context_files']);
const TASK_LEVEL = new Set(['file_path', 'masked_file', 'snippet', 'loc']);

export function parseTemplate(text: string, source: string): PromptTemplate {
  const forms: Record<string, string[]> = {};
  let current: string | null = null;
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const m = SECTION.exec(line);
    if (m) {
      if (forms[m[1]]) throw new Error(`${source}:${i + 1}: the ${m[1]} form appears twice`);
      forms[(current = m[1])] = [];
    } else if (current) forms[current].push(line);
    else if (line.trim() !== '') {
      throw new Error(`${source}:${i + 1}: text before the first "%%% with-paper %%%" or "%%% without-paper %%%" line`);
    }
  });
  const form = (name: string) => {
    const body = forms[name];
    if (!body) return null;
    while (body.length && body[body.length - 1] === '') body.pop();
    const text = `${body.join('\n')}\n`;
    for (const m of text.matchAll(PLACEHOLDER)) {
      const line = () => lines.findIndex((l) => l.includes(m[0])) + 1;
      if (!PAPER_LEVEL.has(m[1]) && !TASK_LEVEL.has(m[1])) throw new Error(`${source}:${line()}: unknown placeholder ${m[0]}`);
      if (m[2] !== undefined && !FORMS[m[1]]?.includes(m[2])) {
        const known = FORMS[m[1]] ? `its forms are ${FORMS[m[1]].map((f) => `{{${m[1]}:${f}}}`).join(', ')}` : `{{${m[1]}}} takes no form`;
        throw new Error(`${source}:${line()}: unknown placeholder form ${m[0]}: ${known}`);
      }
    }
    return text;
  };
  const template = {
    source,
    withPaper: form('with-paper'),
    withoutPaper: form('without-paper'),
    digest: createHash('sha256').update(text).digest('hex'),
    text,
  };
  if (!template.withPaper && !template.withoutPaper) {
    throw new Error(`${source}:1: no "%%% with-paper %%%" or "%%% without-paper %%%" section`);
  }
  return template;
}

/**
 * The shipped templates by name (files in resources/). `original` is the default: the
 * original harness's prompt byte for byte, so scores compare with published ones.
 */
export const SHIPPED_TEMPLATES = { original: 'prompt-template.txt', rcb: 'prompt-template-rcb.txt' } as const;
export type ShippedTemplate = keyof typeof SHIPPED_TEMPLATES;
export const DEFAULT_TEMPLATE: ShippedTemplate = 'original';

export function isShippedTemplate(name: string): name is ShippedTemplate {
  return Object.hasOwn(SHIPPED_TEMPLATES, name);
}

export function loadTemplate(path: string): PromptTemplate {
  return parseTemplate(readFileSync(path, 'utf8'), path);
}

export function formatContextFiles(paper: Paper, form: 'rcb' | 'original' = 'rcb'): string {
  return paper.contextFiles
    .map((f) => {
      // The original harness's File.flatten(): `## PATH`, a blank line, then the lines
      // (split without their terminators) concatenated with nothing between them.
      if (form === 'original') return `## ${f.path}\n\n${f.lines.join('')}\n\n`;
      const text = f.lines.join('\n');
      return `File: ${f.path}\n\`\`\`\n${text}\n\`\`\`\n\n`;
    })
    .join('');
}

/** Every task of a paper needs its text: read once per loaded paper. */
const paperTexts = new WeakMap<Paper, string>();
function paperText(paper: Paper): string {
  let text = paperTexts.get(paper);
  if (text === undefined) paperTexts.set(paper, (text = readPaperText(paper)));
  return text;
}

export function buildPrompt(template: PromptTemplate, paper: Paper, snippet: Snippet, withPaper: boolean): Prompt {
  const form = withPaper ? template.withPaper : template.withoutPaper;
  if (!form) {
    throw new Error(`${template.source}: no "%%% ${withPaper ? 'with-paper' : 'without-paper'} %%%" form in the prompt template`);
  }
  const file = findFile(paper, snippet.file);
  const values: Record<string, (form?: string) => string> = {
    paper_text: () => paperText(paper),
    paper_id: () => paper.meta.id,
    paper_title: () => paper.meta.title ?? paper.meta.id,
    context_files: (form) => formatContextFiles(paper, form === 'original' ? 'original' : 'rcb'),
    file_path: () => snippet.file,
    masked_file: (form) => {
      if (form === 'original') return maskedView(file, snippet, 'original');
      // Documented as ending with a newline, so a template can put the closing fence on the
      // next line; an annotated file without a final newline would glue the fence to its last line.
      const view = maskedView(file, snippet);
      return view.endsWith('\n') ? view : `${view}\n`;
    },
    snippet: () => snippet.name,
    loc: () => String(snippet.loc),
  };
  let out = '';
  let sharedPrefixChars = -1;
  let last = 0;
  for (const m of form.matchAll(PLACEHOLDER)) {
    out += form.slice(last, m.index);
    if (sharedPrefixChars < 0 && TASK_LEVEL.has(m[1])) sharedPrefixChars = out.length;
    out += values[m[1]](m[2]);
    last = m.index! + m[0].length;
  }
  out += form.slice(last);
  return { text: out, sharedPrefixChars: sharedPrefixChars < 0 ? out.length : sharedPrefixChars };
}
