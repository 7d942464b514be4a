import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSnippets } from '../../core/pset/markers';
import { readPset, splitLines } from '../../core/pset/read-pset';
import { extractCompletion, hasPythonBlock } from '../../core/prompt/extract';
import { completionLines, maskedView, originalBody, splice } from '../../core/prompt/mask';
import { buildPrompt, loadTemplate, parseTemplate } from '../../core/prompt/template';
import type { Paper, Snippet, SourceFile } from '../../core/types';
import { goodPaperFiles, makeTempPset, removeTempPsets } from '../fixtures/core/temp-pset';

const ROOT = join(__dirname, '..', '..');

afterAll(removeTempPsets);

/** An annotated file and its snippets by name, parsed the way the pset reader does. */
function annotated(text: string): { file: SourceFile; snippet: (name: string) => Snippet } {
  const file: SourceFile = { path: 'model.py', ...splitLines(text) };
  const { snippets, problems } = parseSnippets(file.lines, 'p', 'model.py', 'model.py');
  expect(problems).toEqual([]);
  return { file, snippet: (name) => snippets.find((s) => s.name === name)! };
}

const NESTED = [
  'import math', //                              1
  '', //                                         2
  'def f(x):', //                                3
  '    # <paper2code name="outer">', //          4
  '    a = x + 1', //                            5
  '    # <paper2code name="inner">', //          6
  '    b = a * 2  # double', //                  7
  '    # </paper2code name="inner">', //         8
  '    # a comment', //                          9
  '    return a + b', //                         10
  '    # </paper2code name="outer">', //         11
  '', //                                         12
  '# <paper2code name="top">', //                13
  'y = f(1)', //                                 14
  '# </paper2code name="top">', //               15
  '',
].join('\n');

describe('maskedView (SPEC 5)', () => {
  it('replaces the outer snippet, inner one included, by two TODO lines and drops the other markers', () => {
    // Prepare
    const { file, snippet } = annotated(NESTED);

    // Act
    const view = maskedView(file, snippet('outer'));

    // Assess
    expect(view).toBe(
      ['import math', '', 'def f(x):', '    # TODO: Implement block "outer"', '    # Approximately 3 lines of code.', '', 'y = f(1)', ''].join('\n'),
    );
  });

  it('keeps the outer body around a masked inner snippet but drops its marker lines', () => {
    // Prepare
    const { file, snippet } = annotated(NESTED);

    // Act
    const view = maskedView(file, snippet('inner'));

    // Assess
    expect(view).toBe(
      [
        'import math',
        '',
        'def f(x):',
        '    a = x + 1',
        '    # TODO: Implement block "inner"',
        '    # Approximately 1 line of code.',
        '    # a comment',
        '    return a + b',
        '',
        'y = f(1)',
        '',
      ].join('\n'),
    );
  });

  it('indents the TODO lines by the smallest indentation of the non-blank body lines', () => {
    // Prepare: the body sits deeper than its markers and has a blank line.
    const { file, snippet } = annotated(
      ['def g(xs):', '    # <paper2code name="loop">', '', '        for x in xs:', '            yield x', '    # </paper2code name="loop">', ''].join('\n'),
    );

    // Act
    const view = maskedView(file, snippet('loop'));

    // Assess
    expect(view).toBe(['def g(xs):', '        # TODO: Implement block "loop"', '        # Approximately 2 lines of code.', ''].join('\n'));
  });

  it('writes a tab-indented body indentation as that many spaces', () => {
    // Prepare
    const { file, snippet } = annotated(['def h():', '\t# <paper2code name="t">', '\t\tx = 1', '\treturn x', '\t# </paper2code name="t">', ''].join('\n'));

    // Act
    const view = maskedView(file, snippet('t'));

    // Assess
    expect(view).toBe(['def h():', ' # TODO: Implement block "t"', ' # Approximately 2 lines of code.', ''].join('\n'));
  });

  it('keeps a file without a final newline without one', () => {
    // Prepare
    const { file, snippet } = annotated('# <paper2code name="top">\ny = 1\n# </paper2code name="top">');

    // Act
    const view = maskedView(file, snippet('top'));

    // Assess
    expect(view).toBe('# TODO: Implement block "top"\n# Approximately 1 line of code.');
  });
});

describe('splice (SPEC 7)', () => {
  it('puts the completion lines verbatim between the markers, markers kept', () => {
    // Prepare
    const { file, snippet } = annotated(NESTED);

    // Act
    const text = splice(file, snippet('inner'), 'b = a * 3\n  c = 0\n');

    // Assess: no re-indentation, the other markers stay in place.
    expect(text.split('\n').slice(3, 10)).toEqual([
      '    # <paper2code name="outer">',
      '    a = x + 1',
      '    # <paper2code name="inner">',
      'b = a * 3',
      '  c = 0',
      '    # </paper2code name="inner">',
      '    # a comment',
    ]);
    expect(text.endsWith('# </paper2code name="top">\n')).toBe(true);
  });

  it('gives the same file with or without a final newline on the completion', () => {
    // Prepare
    const { file, snippet } = annotated(NESTED);

    // Act
    const withNewline = splice(file, snippet('top'), 'y = 2\n');
    const without = splice(file, snippet('top'), 'y = 2');

    // Assess
    expect(withNewline).toBe(without);
    expect(withNewline.endsWith('# <paper2code name="top">\ny = 2\n# </paper2code name="top">\n')).toBe(true);
  });

  it('keeps blank lines a completion ends with, beyond its final newline', () => {
    expect(completionLines('x = 1\n\n')).toEqual(['x = 1', '']);
    expect(completionLines('')).toEqual([]);
  });

  it('leaves the markers adjacent for an empty completion', () => {
    // Prepare
    const { file, snippet } = annotated(NESTED);

    // Act
    const text = splice(file, snippet('top'), '');

    // Assess
    expect(text.endsWith('# <paper2code name="top">\n# </paper2code name="top">\n')).toBe(true);
  });

  it('keeps the file without a final newline when it had none', () => {
    // Prepare
    const { file, snippet } = annotated('# <paper2code name="top">\ny = 1\n# </paper2code name="top">');

    // Act
    const text = splice(file, snippet('top'), 'y = 2\n');

    // Assess
    expect(text).toBe('# <paper2code name="top">\ny = 2\n# </paper2code name="top">');
  });

  it('gives back the original file when the completion is the original body', () => {
    // Prepare
    const { file, snippet } = annotated(NESTED);

    // Act
    const texts = ['outer', 'inner', 'top'].map((name) => splice(file, snippet(name), originalBody(snippet(name))));

    // Assess
    expect(texts).toEqual([NESTED, NESTED, NESTED]);
  });
});

describe('extractCompletion (SPEC 6)', () => {
  it.each<[string, string, string]>([
    ['no fence', 'x = 1', ''],
    ['one python block', 'Here:\n```python\nx = 1\n```\n', 'x = 1\n'],
    ['the last of several python blocks', '```python\nfirst = 1\n```\nthen\n```python\nsecond = 2\n```', 'second = 2\n'],
    ['a python block after a block of another language', '```bash\nls\n```\n```python\nx = 1\n```', 'x = 1\n'],
    ['no ```py block', '```py\nx = 1\n```', ''],
    ['no plain ``` block', '```\nx = 1\n```', ''],
    ['no ```python3 block', '```python3\nx = 1\n```', ''],
    ['no block without a newline after python', '```python x = 1\n```', ''],
    ['the python block, not the trailing prose', '```python\n    y = 2\n```\nThis sets y.\n```py\nz = 3\n```', '    y = 2\n'],
    ['the indentation verbatim', '```python\n        deep = 1\n    shallow = 2\n```', '        deep = 1\n    shallow = 2\n'],
    ['an empty block as empty', '```python\n```', ''],
  ])('takes %s', (_what, answer, completion) => {
    expect(extractCompletion(answer)).toBe(completion);
  });

  it('tells whether the answer has a python block at all', () => {
    expect(hasPythonBlock('```python\n```')).toBe(true);
    expect(hasPythonBlock('```py\nx\n```')).toBe(false);
  });
});

describe('parseTemplate', () => {
  it('reads both forms, trimming blank lines at their ends', () => {
    // Act
    const t = parseTemplate('%%% with-paper %%%\nA {{paper_text}}\n\n%%% without-paper %%%\nB\n\n\n', 'tpl.txt');

    // Assess
    expect(t.withPaper).toBe('A {{paper_text}}\n');
    expect(t.withoutPaper).toBe('B\n');
    expect(t.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('names the file and line of an unknown placeholder', () => {
    expect(() => parseTemplate('%%% with-paper %%%\nok {{snippet}}\nbad {{paper}}\n', 'tpl.txt')).toThrow('tpl.txt:3: unknown placeholder {{paper}}');
  });

  it('names the file and line of text before the first section', () => {
    expect(() => parseTemplate('\nintro\n%%% with-paper %%%\nx\n', 'tpl.txt')).toThrow(
      'tpl.txt:2: text before the first "%%% with-paper %%%" or "%%% without-paper %%%" line',
    );
  });

  it('names the file and line of a form given twice', () => {
    expect(() => parseTemplate('%%% with-paper %%%\nx\n%%% with-paper %%%\ny\n', 'tpl.txt')).toThrow('tpl.txt:3: the with-paper form appears twice');
  });

  it('refuses a file with no form', () => {
    expect(() => parseTemplate('\n\n', 'tpl.txt')).toThrow('tpl.txt:1: no "%%% with-paper %%%" or "%%% without-paper %%%" section');
  });

  it('changes its digest with its text', () => {
    const a = parseTemplate('%%% with-paper %%%\nx\n', 't');
    const b = parseTemplate('%%% with-paper %%%\ny\n', 't');
    expect(a.digest).not.toBe(b.digest);
  });
});

describe('buildPrompt', () => {
  const CONTEXT_A = 'def helper():\n    return 1\n';
  const CONTEXT_B = 'CONST = 2\nOTHER = 3\n';
  const PAPER_TEXT = '\\section{Alpha}\nWe add one.\n';

  function alphaPaper(changes: Record<string, string> = {}): Paper {
    const files = {
      ...goodPaperFiles(),
      'papers.yaml': '- id: alpha\n  title: Alpha\n  annotated_file_paths: model.py\n  context_file_paths: [utils.py, consts.py]\n',
      'alpha/paper2code_paper.tex': PAPER_TEXT,
      'alpha/utils.py': CONTEXT_A,
      'alpha/consts.py': CONTEXT_B,
      ...changes,
    };
    const root = makeTempPset(files);
    const { pset, problems } = readPset(root, { displayBase: root });
    expect(problems).toEqual([]);
    return pset.papers[0];
  }

  const TEMPLATE = parseTemplate(
    [
      '%%% with-paper %%%',
      'Paper {{paper_id}} ({{paper_title}}):',
      '{{paper_text}}',
      '{{context_files}}File: {{file_path}}',
      '```',
      '{{masked_file}}```',
      'Write "{{snippet}}" ({{loc}} lines).',
      '%%% without-paper %%%',
      'Paper {{paper_id}} ({{paper_title}}):',
      '{{context_files}}File: {{file_path}}',
      '```',
      '{{masked_file}}```',
      'Write "{{snippet}}" ({{loc}} lines).',
    ].join('\n'),
    'test-template.txt',
  );

  it('places each context file in full under a File: line, with its newlines, before the masked file', () => {
    // Prepare
    const paper = alphaPaper();
    const inner = paper.snippets.find((s) => s.name === 'inner')!;

    // Act
    const { text } = buildPrompt(TEMPLATE, paper, inner, true);

    // Assess
    const contextA = 'File: utils.py\n```\ndef helper():\n    return 1\n```\n\n';
    const contextB = 'File: consts.py\n```\nCONST = 2\nOTHER = 3\n```\n\n';
    const masked = `File: model.py\n\`\`\`\n${maskedView(paper.annotatedFiles[0], inner)}\`\`\`\n`;
    expect(text).toContain(contextA + contextB + masked);
    expect(text.indexOf(contextA)).toBeLessThan(text.indexOf(contextB));
    expect(text).toContain('# TODO: Implement block "inner"\n    # Approximately 1 line of code.\n');
    expect(text).toContain('Write "inner" (1 lines).');
  });

  it('ends the shared prefix where the first task placeholder begins', () => {
    // Prepare
    const paper = alphaPaper();
    const [outer, inner] = paper.snippets;

    // Act
    const a = buildPrompt(TEMPLATE, paper, outer, true);
    const b = buildPrompt(TEMPLATE, paper, inner, true);

    // Assess
    expect(a.text.slice(0, a.sharedPrefixChars).endsWith('CONST = 2\nOTHER = 3\n```\n\nFile: ')).toBe(true);
    expect(a.text.slice(a.sharedPrefixChars).startsWith('model.py\n')).toBe(true);
    expect(b.sharedPrefixChars).toBe(a.sharedPrefixChars);
    expect(b.text.slice(0, b.sharedPrefixChars)).toBe(a.text.slice(0, a.sharedPrefixChars));
  });

  it('differs between the with-paper and without-paper forms by the paper text only', () => {
    // Prepare
    const paper = alphaPaper();
    const outer = paper.snippets[0];

    // Act
    const withPaper = buildPrompt(TEMPLATE, paper, outer, true);
    const withoutPaper = buildPrompt(TEMPLATE, paper, outer, false);

    // Assess
    expect(withPaper.text).toContain(PAPER_TEXT);
    expect(withoutPaper.text).not.toContain('We add one.');
    expect(withPaper.text.replace(`${PAPER_TEXT}\n`, '')).toBe(withoutPaper.text);
    expect(withPaper.sharedPrefixChars - withoutPaper.sharedPrefixChars).toBe(PAPER_TEXT.length + 1);
  });

  it('puts the closing fence on its own line when the annotated file has no final newline', () => {
    // Prepare
    const paper = alphaPaper({ 'alpha/model.py': goodPaperFiles()['alpha/model.py'].replace(/\n$/, '') });
    const outer = paper.snippets[0];

    // Act
    const { text } = buildPrompt(TEMPLATE, paper, outer, true);

    // Assess
    expect(text).toContain('    # Approximately 3 lines of code.\n```\nWrite');
  });

  it('names the template file when the form asked for is missing', () => {
    // Prepare
    const paper = alphaPaper();
    const onlyWith = parseTemplate('%%% with-paper %%%\n{{masked_file}}\n', 'only-with.txt');

    // Act
    const build = () => buildPrompt(onlyWith, paper, paper.snippets[0], false);

    // Assess
    expect(build).toThrow('only-with.txt: no "%%% without-paper %%%" form in the prompt template');
  });

  it('builds prompts from the rcb template with the task at the end of the shared prefix', () => {
    // Prepare
    const template = loadTemplate(join(ROOT, 'resources', 'prompt-template-rcb.txt'));
    const paper = alphaPaper();

    // Act
    const prompts = paper.snippets.map((s) => buildPrompt(template, paper, s, true));

    // Assess
    expect(readFileSync(join(ROOT, 'resources', 'prompt-template-rcb.txt'), 'utf8')).toContain('{{masked_file}}');
    for (const p of prompts) {
      expect(p.text).toContain(PAPER_TEXT);
      expect(p.text.slice(0, p.sharedPrefixChars)).toBe(prompts[0].text.slice(0, prompts[0].sharedPrefixChars));
      expect(p.text.slice(0, p.sharedPrefixChars)).toContain('File: utils.py\n```\ndef helper():\n    return 1\n```');
      expect(p.text.slice(0, p.sharedPrefixChars)).not.toContain('model.py');
    }
  });
});
