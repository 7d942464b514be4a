import { mkdirSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { PSET_MINI, rcb, tempDir } from '../helpers/cli';

describe('rcb validate', () => {
  it('accepts the bundled example with no problems', () => {
    const r = rcb(['validate']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/4 paper\(s\), 28 snippet\(s\), no problems/);
  });

  it('prints each problem as path:line: message and exits 1', () => {
    // Prepare: a copy of one paper with a close marker that names the wrong snippet.
    const root = tempDir();
    cpSync(join(PSET_MINI, 'smoothfocal'), join(root, 'smoothfocal'), { recursive: true });
    writeFileSync(
      join(root, 'papers.yaml'),
      '- id: smoothfocal\n  annotated_file_paths: [loss.py]\n  context_file_paths: [numerics.py, defaults.py]\n- id: ghost\n  annotated_file_paths: a.py\n',
    );
    writeFileSync(join(root, 'smoothfocal', 'loss.py'), '# <paper2code name="a">\nx = 1\n# </paper2code name="b">\n');
    // Act
    const r = rcb(['validate', '--pset', root], { cwd: root });
    // Assess
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('smoothfocal/loss.py:3: close marker for "b" but the innermost open snippet is "a"');
    expect(r.stdout).toContain('smoothfocal/loss.py:1: snippet "a" is never closed');
    expect(r.stdout).toMatch(/^papers\.yaml:4: paper "ghost": paper folder ghost is missing$/m);
  });

  it('reports a snippet whose two markers say nam="x" at both lines instead of "no problems"', () => {
    // Prepare: one of smoothfocal's snippets with the attribute misspelt on both tags.
    const root = tempDir();
    cpSync(join(PSET_MINI, 'smoothfocal'), join(root, 'smoothfocal'), { recursive: true });
    writeFileSync(join(root, 'papers.yaml'), '- id: smoothfocal\n  annotated_file_paths: [loss.py]\n  context_file_paths: [numerics.py, defaults.py]\n');
    const loss = join(root, 'smoothfocal', 'loss.py');
    writeFileSync(loss, readFileSync(loss, 'utf8').replace(/(<\/?paper2code )name="log softmax"/g, '$1nam="log softmax"'));
    // Act
    const r = rcb(['validate', '--pset', root], { cwd: root });
    // Assess
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^smoothfocal\/loss\.py:8: malformed marker: unknown attribute "nam"/m);
    expect(r.stdout).toMatch(/^smoothfocal\/loss\.py:12: malformed marker: unknown attribute "nam"/m);
    expect(r.stderr).toContain('2 problem(s)');
  });
});

describe('rcb tasks', () => {
  it('lists every snippet as JSON with paper, file, snippet, loc and parent', () => {
    const r = rcb(['tasks', '--json']);
    expect(r.status).toBe(0);
    const tasks = JSON.parse(r.stdout) as { paper: string; file: string; snippet: string; loc: number; parent: string | null }[];
    expect(tasks).toHaveLength(28);
    expect(tasks).toContainEqual({ paper: 'temperedattn', file: 'attention.py', snippet: 'logit scale', loc: 1, parent: 'tempered logits' });
    expect(tasks).toContainEqual({ paper: 'adamlite', file: 'schedule.py', snippet: 'cosine decay', loc: 3, parent: null });
  });
});

describe('rcb prompt', () => {
  it("prints the original harness's prompt by default: the paper, the context files glued under ## PATH, the masked file", () => {
    const r = rcb(['prompt', 'smoothfocal', 'focal modulation']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('    # TODO: Implement block "focal modulation"\n\n    # Approximately 5 line(s) of code.\n\n');
    expect(r.stdout).not.toContain('paper2code');
    expect(r.stdout).toContain('\n## numerics.py\n\n');
    expect(
      r.stdout.startsWith('\nYou are an expert in reproducing research code from a paper.\n\nHere is the paper that you need to use to complete the code:\n'),
    ).toBe(true);
  });

  it("prints rcb's wording with --prompt-template rcb", () => {
    const r = rcb(['prompt', 'smoothfocal', 'focal modulation', '--prompt-template', 'rcb']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('    # TODO: Implement block "focal modulation"\n    # Approximately 5 lines of code.\n');
    expect(r.stdout).toContain('File: numerics.py\n');
    expect(r.stdout).toContain('## Paper');
  });

  it('leaves the paper out with --no-paper', () => {
    const r = rcb(['prompt', 'smoothfocal', 'focal modulation', '--no-paper']);
    expect(r.status).toBe(0);
    expect(r.stdout.startsWith('\nYou are an expert in completing research code.\n')).toBe(true);
    expect(rcb(['prompt', 'smoothfocal', 'focal modulation', '--no-paper', '--prompt-template', 'rcb']).stdout).not.toContain('## Paper');
  });

  it('names the snippets of the paper when the snippet is unknown', () => {
    const r = rcb(['prompt', 'smoothfocal', 'nope']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/unknown snippet "nope" in paper "smoothfocal" \(snippets: .*log softmax/);
  });

  it('uses a replacement template and reports its unknown placeholders with file and line', () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 't.txt');
    writeFileSync(file, '%%% with-paper %%%\nWrite {{snippet}}\n{{bogus}}\n');
    const r = rcb(['prompt', 'smoothfocal', 'log softmax', '--prompt-template', file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${file}:3: unknown placeholder {{bogus}}`);
    writeFileSync(file, '%%% with-paper %%%\nWrite {{snippet}} ({{loc}} lines) in {{file_path}}\n');
    const ok = rcb(['prompt', 'smoothfocal', 'log softmax', '--prompt-template', file]);
    expect(ok.stdout).toBe('Write log softmax (3 lines) in loss.py\n');
  });
});

describe('rcb prompts', () => {
  it("writes every task's exact prompt as JSONL, the same text rcb prompt prints", () => {
    // Act
    const r = rcb(['prompts', '--papers', 'smoothfocal,grouprms', '--no-paper']);

    // Assess
    expect(r.status).toBe(0);
    const lines = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { paper: string; file: string; snippet: string; no_paper: boolean; prompt: string });
    const tasks = JSON.parse(rcb(['tasks', '--json', '--papers', 'smoothfocal,grouprms']).stdout) as { paper: string; file: string; snippet: string }[];
    expect(lines.map((l) => [l.paper, l.file, l.snippet])).toEqual(tasks.map((t) => [t.paper, t.file, t.snippet]));
    expect(lines.every((l) => l.no_paper === true && Object.keys(l).join() === 'paper,file,snippet,no_paper,prompt')).toBe(true);
    const one = lines.find((l) => l.snippet === 'focal modulation')!;
    expect(one.prompt).toBe(rcb(['prompt', 'smoothfocal', 'focal modulation', '--no-paper']).stdout);
    expect(r.stderr).toContain(`${lines.length} prompt(s) from 2 paper(s), template original, without the paper`);
  });

  it('takes a template by name, with the paper by default', () => {
    const r = rcb(['prompts', '--papers', 'grouprms', '--prompt-template', 'rcb']);
    expect(r.status).toBe(0);
    const first = JSON.parse(r.stdout.split('\n')[0]) as { no_paper: boolean; prompt: string };
    expect(first.no_paper).toBe(false);
    expect(first.prompt).toContain('## Paper');
  });

  it('names the shipped templates when the one asked for does not exist', () => {
    const r = rcb(['prompts', '--prompt-template', 'nope']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/prompt template .*nope does not exist \(--prompt-template takes original, rcb or a file\)/);
  });
});
