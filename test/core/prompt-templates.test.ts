import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPset } from '../../core/pset/read-pset';
import { findSnippet } from '../../core/prompt/mask';
import { buildPrompt, loadTemplate, parseTemplate, SHIPPED_TEMPLATES } from '../../core/prompt/template';
import { resourcePath } from '../../core/util/package-root';

import { describeWithRealPset, ORIGINAL_PROMPTS, REAL_PSET } from '../helpers/shared-data';
const ROOT = join(__dirname, '..', '..');

interface FixtureEntry {
  file: string;
  paper: string;
  snippet: string;
  no_paper: boolean;
  bytes: number;
}

describeWithRealPset('the shipped "original" template', () => {
  const { pset, problems } = readPset(REAL_PSET);
  const template = loadTemplate(resourcePath(SHIPPED_TEMPLATES.original));
  const index = JSON.parse(readFileSync(join(ORIGINAL_PROMPTS, 'index.json'), 'utf8')) as FixtureEntry[];

  it('reads the real pset without a problem', () => {
    expect(problems).toEqual([]);
    expect(index.length).toBe(5);
  });

  it.each(index.map((e) => [e.file, e] as const))('reproduces %s byte for byte from the real pset', (_, entry) => {
    // Prepare
    const paper = pset.papers.find((p) => p.meta.id === entry.paper)!;
    const want = readFileSync(join(ORIGINAL_PROMPTS, entry.file));

    // Act
    const { text } = buildPrompt(template, paper, findSnippet(paper, entry.snippet), !entry.no_paper);

    // Assess
    expect(Buffer.byteLength(text)).toBe(entry.bytes);
    expect(Buffer.from(text, 'utf8').equals(want)).toBe(true);
  });

  it("keeps the paper and context files in the prefix shared by a paper's tasks", () => {
    // Prepare: fractalgen has context files and several snippets.
    const paper = pset.papers.find((p) => p.meta.id === 'fractalgen')!;

    // Act
    const prompts = paper.snippets.map((s) => buildPrompt(template, paper, s, true));

    // Assess
    const prefix = prompts[0].text.slice(0, prompts[0].sharedPrefixChars);
    expect(prefix).toContain(`## ${paper.contextFiles[0].path}\n\n`);
    for (const p of prompts) expect(p.text.slice(0, p.sharedPrefixChars)).toBe(prefix);
  });
});

describe('the shipped "rcb" template', () => {
  it('renders every task of the bundled example as it did before templates had names', () => {
    // Prepare: digests of the prompts the rcb wording gave before the `original` template existed.
    const before = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'core', 'rcb-template-prompts.json'), 'utf8')) as {
      paper: string;
      file: string;
      snippet: string;
      no_paper: boolean;
      sha256: string;
      sharedPrefixChars: number;
    }[];
    const { pset } = readPset(join(ROOT, 'examples', 'pset-mini'));
    const template = loadTemplate(resourcePath(SHIPPED_TEMPLATES.rcb));

    // Act
    const now = before.map((b) => {
      const paper = pset.papers.find((p) => p.meta.id === b.paper)!;
      const prompt = buildPrompt(template, paper, findSnippet(paper, b.snippet, b.file), !b.no_paper);
      return { ...b, sha256: createHash('sha256').update(prompt.text).digest('hex'), sharedPrefixChars: prompt.sharedPrefixChars };
    });

    // Assess
    expect(before.length).toBe(56);
    expect(now).toEqual(before);
  });
});

describe('placeholder forms', () => {
  it('refuses an unknown form, naming the line and the forms there are', () => {
    expect(() => parseTemplate('%%% with-paper %%%\nok\n{{masked_file:glued}}\n', 'tpl.txt')).toThrow(
      'tpl.txt:3: unknown placeholder form {{masked_file:glued}}: its forms are {{masked_file:rcb}}, {{masked_file:original}}',
    );
    expect(() => parseTemplate('%%% with-paper %%%\n{{snippet:original}}\n', 'tpl.txt')).toThrow(
      'tpl.txt:2: unknown placeholder form {{snippet:original}}: {{snippet}} takes no form',
    );
  });

  it('writes context files as the original harness did: ## PATH, a blank line, the lines glued, two newlines', () => {
    // Prepare
    const { pset } = readPset(join(ROOT, 'examples', 'pset-mini'), { papers: ['temperedattn'] });
    const paper = pset.papers[0];
    const t = parseTemplate('%%% with-paper %%%\n[{{context_files:original}}|{{masked_file:original}}]\n', 't');

    // Act
    const { text } = buildPrompt(t, paper, paper.snippets[0], true);

    // Assess
    const ctx = paper.contextFiles[0];
    expect(text.startsWith(`[## ${ctx.path}\n\n${ctx.lines.join('')}\n\n|`)).toBe(true);
    expect(text).toContain(`# TODO: Implement block "${paper.snippets[0].name}"\n\n`);
    expect(text).toContain(`# Approximately ${paper.snippets[0].loc} line(s) of code.\n\n`);
    expect(text).toMatch(/[^\n]\]\n$/); // the masked file loses its final newline
  });
});
