import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatProblem, loadPset, PsetError, readPset } from '../../core/pset/read-pset';
import { goodPaperFiles, makeTempPset, MODEL_PY, removeTempPsets, writeFiles } from '../fixtures/core/temp-pset';

const PSET_MINI = join(__dirname, '..', '..', 'examples', 'pset-mini');

afterAll(removeTempPsets);

/** Read a temp pset built from the good one with `changes` (null deletes a file); problems as `path:line: message`. */
function readWith(changes: Record<string, string | null>, papers?: string[]) {
  const files = goodPaperFiles();
  const root = makeTempPset(Object.fromEntries(Object.entries(files).filter(([k]) => !(k in changes) || changes[k] !== null)));
  writeFiles(root, Object.fromEntries(Object.entries(changes).filter((e): e is [string, string] => e[1] !== null)));
  const result = readPset(root, { displayBase: root, papers });
  return { root, ...result, lines: result.problems.map(formatProblem) };
}

const yamlOf = (...lines: string[]) => `${lines.join('\n')}\n`;

describe('readPset: problems as path:line: message', () => {
  it('reads the good pset with no problem', () => {
    // Act
    const { lines, pset } = readWith({});

    // Assess
    expect(lines).toEqual([]);
    expect(pset.papers.map((p) => [p.meta.id, p.snippets.map((s) => s.name)])).toEqual([['alpha', ['outer', 'inner']]]);
  });

  it('names the paper and the path of a missing paper folder', () => {
    // Prepare
    const changes = Object.fromEntries(
      Object.keys(goodPaperFiles())
        .filter((k) => k.startsWith('alpha/'))
        .map((k) => [k, null]),
    );

    // Act
    const { lines, pset } = readWith(changes);

    // Assess
    expect(lines).toEqual(['papers.yaml:1: paper "alpha": paper folder alpha is missing']);
    expect(pset.papers).toEqual([]);
  });

  it('names a missing paper text', () => {
    const { lines } = readWith({ 'alpha/paper2code_paper.tex': null });
    expect(lines).toEqual(['papers.yaml:1: paper "alpha": paper text alpha/paper2code_paper.tex (or .md) is missing']);
  });

  it('accepts paper2code_paper.md when there is no .tex', () => {
    // Act
    const { lines, pset } = readWith({ 'alpha/paper2code_paper.tex': null, 'alpha/paper2code_paper.md': '# Alpha\n' });

    // Assess
    expect(lines).toEqual([]);
    expect(pset.papers[0].paperTextFile).toBe('paper2code_paper.md');
  });

  it('names a missing test entry point', () => {
    const { lines } = readWith({ 'alpha/paper2code_test.py': null });
    expect(lines).toEqual(['papers.yaml:1: paper "alpha": test entry point alpha/paper2code_test.py is missing']);
  });

  it('names a missing annotated file and a missing context file', () => {
    // Act
    const { lines } = readWith({ 'alpha/model.py': null, 'alpha/utils.py': null });

    // Assess
    expect(lines).toEqual([
      'papers.yaml:1: paper "alpha": annotated file alpha/model.py is missing',
      'papers.yaml:1: paper "alpha": context file alpha/utils.py is missing',
    ]);
  });

  it('points at the entry of the paper, not at line 1, when papers.yaml has several', () => {
    // Prepare
    const yaml = yamlOf(
      '# header comment',
      '- id: beta', //                              2
      '  annotated_file_paths: model.py',
      '',
      '- id: alpha', //                             5
      '  annotated_file_paths: model.py',
    );

    // Act
    const { lines } = readWith({
      'papers.yaml': yaml,
      'beta/paper2code_paper.md': 'b\n',
      'beta/paper2code_test.py': '',
      'beta/model.py': MODEL_PY,
      'alpha/paper2code_test.py': null,
    });

    // Assess
    expect(lines).toEqual(['papers.yaml:5: paper "alpha": test entry point alpha/paper2code_test.py is missing']);
  });

  it('reports a YAML syntax error with its line', () => {
    // Prepare: a tab where YAML wants spaces, on line 3.
    const yaml = yamlOf('# papers', '- id: alpha', '\tannotated_file_paths: model.py');

    // Act
    const { problems, pset } = readWith({ 'papers.yaml': yaml });

    // Assess
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0].path).toBe('papers.yaml');
    expect(problems[0].line).toBe(3);
    expect(problems[0].message).toMatch(/^YAML: /);
    expect(pset.papers).toEqual([]);
  });

  it('reports a papers.yaml that is not a list', () => {
    const { lines } = readWith({ 'papers.yaml': yamlOf('id: alpha', 'annotated_file_paths: model.py') });
    expect(lines).toEqual(['papers.yaml:1: papers.yaml must be a list of papers']);
  });

  it('reports a missing papers.yaml', () => {
    const { lines } = readWith({ 'papers.yaml': null });
    expect(lines).toEqual(['papers.yaml:0: papers.yaml is missing']);
  });

  it('reports an entry without id at its line', () => {
    // Prepare
    const yaml = yamlOf('- id: alpha', '  annotated_file_paths: model.py', '- title: Nameless', '  annotated_file_paths: model.py');

    // Act
    const { lines, pset } = readWith({ 'papers.yaml': yaml });

    // Assess
    expect(lines).toEqual(['papers.yaml:3: paper entry has no id']);
    expect(pset.papers.map((p) => p.meta.id)).toEqual(['alpha']);
  });

  it('reports an entry that is not a mapping', () => {
    const { lines } = readWith({ 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '- just a string') });
    expect(lines).toEqual(['papers.yaml:3: each paper must be a mapping with at least id and annotated_file_paths']);
  });

  it('reports a duplicate id at the second entry, naming the first', () => {
    // Prepare
    const yaml = yamlOf('- id: alpha', '  annotated_file_paths: model.py', '- id: alpha', '  annotated_file_paths: model.py');

    // Act
    const { lines } = readWith({ 'papers.yaml': yaml });

    // Assess
    expect(lines).toEqual(['papers.yaml:3: duplicate paper id "alpha" (first at line 1)']);
  });

  it('reports a snippet name used in two files of one paper, at the second', () => {
    // Prepare
    const yaml = yamlOf('- id: alpha', '  annotated_file_paths: [model.py, other.py]');
    const other = ['x = 0', '# <paper2code name="inner">', 'y = 1', '# </paper2code name="inner">', ''].join('\n');

    // Act
    const { lines } = readWith({ 'papers.yaml': yaml, 'alpha/other.py': other });

    // Assess
    expect(lines).toEqual(['alpha/other.py:2: duplicate snippet name "inner" (also in model.py)']);
  });

  it('reports marker problems at the annotated file and line', () => {
    // Prepare
    const broken = MODEL_PY.replace('    # </paper2code name="inner">', '# </paper2code name="inner">');

    // Act
    const { lines, pset } = readWith({ 'alpha/model.py': broken });

    // Assess
    expect(lines).toEqual(['alpha/model.py:9: close marker for "inner" is indented differently from its open marker at line 7']);
    expect(pset.papers).toEqual([]);
  });

  it('reports a paper asked for that papers.yaml does not list', () => {
    // Act
    const { lines, pset } = readWith({}, ['alpha', 'zeta']);

    // Assess
    expect(lines).toEqual(['papers.yaml:0: paper "zeta" is not in papers.yaml (its papers: alpha)']);
    expect(pset.papers.map((p) => p.meta.id)).toEqual(['alpha']);
  });

  it('suggests the nearest paper id for a misspelt one', () => {
    const { lines } = readWith({}, ['alpah']);
    expect(lines).toEqual(['papers.yaml:0: paper "alpah" is not in papers.yaml; did you mean "alpha"? (its papers: alpha)']);
  });

  it('says a pset folder that does not exist does not exist (not that its papers.yaml is missing)', () => {
    const { problems } = readPset('/nonexistent/rcb-pset', {});
    expect(problems).toEqual([{ path: '/nonexistent/rcb-pset', line: 0, message: 'the pset folder does not exist' }]);
  });

  it('leaves out papers not asked for without reading them', () => {
    // Prepare: beta is broken, but only alpha is asked for.
    const yaml = yamlOf('- id: alpha', '  annotated_file_paths: model.py', '- id: beta', '  annotated_file_paths: gone.py');

    // Act
    const { lines, pset } = readWith({ 'papers.yaml': yaml }, ['alpha']);

    // Assess
    expect(lines).toEqual([]);
    expect(pset.papers.map((p) => p.meta.id)).toEqual(['alpha']);
  });

  it('throws every problem at once from loadPset', () => {
    // Prepare
    const root = makeTempPset({ ...goodPaperFiles(), 'alpha/utils.py': '' });
    rmSync(join(root, 'alpha', 'utils.py'));
    rmSync(join(root, 'alpha', 'paper2code_test.py'));

    // Act
    let error: unknown;
    try {
      loadPset(root, { displayBase: root });
    } catch (e) {
      error = e;
    }

    // Assess
    expect(error).toBeInstanceOf(PsetError);
    expect((error as PsetError).problems.map(formatProblem)).toEqual([
      'papers.yaml:1: paper "alpha": test entry point alpha/paper2code_test.py is missing',
      'papers.yaml:1: paper "alpha": context file alpha/utils.py is missing',
    ]);
  });
});

describe('readPset: papers.yaml values (SPEC 2)', () => {
  const metaOf = (yaml: string, extraFiles: Record<string, string> = {}) => {
    const { lines, pset } = readWith({ 'papers.yaml': yaml, ...extraFiles });
    expect(lines).toEqual([]);
    return pset.papers[0].meta;
  };

  it('loads plain, quoted and YAML 1.1 timestamp dates as YYYY-MM-DD strings', () => {
    // Prepare
    const entry = [
      '- id: alpha',
      '  annotated_file_paths: model.py',
      '  arxiv_date: 2024-02-29',
      '  first_commit_date: "2024-03-15"',
      '  last_commit_date: 2024-12-31',
    ];

    // Act
    const plain = metaOf(yamlOf(...entry));
    const yaml11 = metaOf(yamlOf('%YAML 1.1', '---', ...entry));

    // Assess
    for (const meta of [plain, yaml11]) {
      expect([meta.arxiv_date, meta.first_commit_date, meta.last_commit_date]).toEqual(['2024-02-29', '2024-03-15', '2024-12-31']);
    }
  });

  it('reports a date that is not YYYY-MM-DD', () => {
    const { lines } = readWith({ 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '  first_commit_date: March 2024') });
    expect(lines).toEqual(['papers.yaml:1: paper "alpha": first_commit_date "March 2024" is not a YYYY-MM-DD date']);
  });

  it('trims stray whitespace from file paths', () => {
    // Act
    const meta = metaOf(yamlOf('- id: alpha', '  annotated_file_paths: "  model.py "', '  context_file_paths: [" utils.py  "]'));

    // Assess
    expect(meta.annotated_file_paths).toEqual(['model.py']);
    expect(meta.context_file_paths).toEqual(['utils.py']);
  });

  it('reports a file listed twice (after trimming), which would duplicate its tasks', () => {
    const { lines } = readWith({
      'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '  context_file_paths: [" utils.py", "utils.py  "]'),
    });
    expect(lines).toEqual(['papers.yaml:1: paper "alpha": context_file_paths lists utils.py more than once']);
  });

  it('takes annotated_file_paths as a string or a list', () => {
    // Prepare
    const other = 'x = 0\n# <paper2code name="other">\ny = 1\n# </paper2code name="other">\n';

    // Act
    const asString = metaOf(yamlOf('- id: alpha', '  annotated_file_paths: model.py'));
    const asList = metaOf(yamlOf('- id: alpha', '  annotated_file_paths:', '    - model.py', '    - other.py'), { 'alpha/other.py': other });

    // Assess
    expect(asString.annotated_file_paths).toEqual(['model.py']);
    expect(asList.annotated_file_paths).toEqual(['model.py', 'other.py']);
  });

  it.each([
    ['null', '  context_file_paths: null', []],
    ['empty', '  context_file_paths:', []],
    ['absent', '', []],
    ['a string', '  context_file_paths: utils.py', ['utils.py']],
    ['a list', '  context_file_paths: [utils.py, more.py]', ['utils.py', 'more.py']],
  ])('takes context_file_paths as %s', (_kind, line, expected) => {
    // Act
    const { lines, pset } = readWith({
      'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', line),
      'alpha/more.py': 'z = 2\n',
    });

    // Assess
    expect(lines).toEqual([]);
    expect(pset.papers[0].meta.context_file_paths).toEqual(expected);
    expect(pset.papers[0].contextFiles.map((f) => f.path)).toEqual(expected);
  });

  it('rejects context_file_paths of another type', () => {
    const { lines } = readWith({ 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '  context_file_paths: {a: 1}') });
    expect(lines).toEqual(['papers.yaml:1: paper "alpha": context_file_paths must be null, a string or a list of strings']);
  });

  it('keeps unknown keys in meta.extra and known text keys as strings', () => {
    // Act
    const meta = metaOf(yamlOf('- id: alpha', '  annotated_file_paths: model.py', '  title: Alpha', '  venue: 2024', '  note: hand-made', '  tags: [a, b]'));

    // Assess
    expect(meta.title).toBe('Alpha');
    expect(meta.venue).toBe('2024');
    expect(meta.extra).toEqual({ note: 'hand-made', tags: ['a', 'b'] });
  });
});

describe('readPset: digests', () => {
  it('is the same when read twice and changes when any file of the paper changes', () => {
    // Prepare
    const root = makeTempPset(goodPaperFiles());
    const read = () => readPset(root, { displayBase: root }).pset;

    // Act
    const first = read();
    const again = read();
    writeFileSync(join(root, 'alpha', 'data_ref.py'), 'REF = 1\n');
    const withNewFile = read();
    writeFileSync(join(root, 'alpha', 'data_ref.py'), 'REF = 2\n');
    const withChangedFile = read();

    // Assess
    expect(again.digest).toBe(first.digest);
    expect(again.papers[0].digest).toBe(first.papers[0].digest);
    const digests = new Set([first, withNewFile, withChangedFile].map((p) => p.papers[0].digest));
    expect(digests.size).toBe(3);
    expect(new Set([first, withNewFile, withChangedFile].map((p) => p.digest)).size).toBe(3);
  });

  it('changes when the papers.yaml entry changes', () => {
    // Prepare
    const root = makeTempPset(goodPaperFiles());
    const before = readPset(root, { displayBase: root }).pset.papers[0].digest;

    // Act
    writeFiles(root, { 'papers.yaml': goodPaperFiles()['papers.yaml'].replace('2024-03-15', '2024-03-16') });
    const after = readPset(root, { displayBase: root }).pset.papers[0].digest;

    // Assess
    expect(after).not.toBe(before);
  });

  it('keeps a paper digest when another paper changes', () => {
    // Prepare
    const yaml = yamlOf('- id: alpha', '  annotated_file_paths: model.py', '- id: beta', '  annotated_file_paths: model.py');
    const root = makeTempPset({
      ...goodPaperFiles(),
      'papers.yaml': yaml,
      'beta/paper2code_paper.md': 'b\n',
      'beta/paper2code_test.py': '',
      'beta/model.py': MODEL_PY,
    });
    const digestOf = (id: string) => readPset(root, { displayBase: root }).pset.papers.find((p) => p.meta.id === id)!.digest;
    const alphaBefore = digestOf('alpha');
    const betaBefore = digestOf('beta');

    // Act
    writeFiles(root, { 'beta/paper2code_test.py': 'import model\n' });

    // Assess
    expect(digestOf('alpha')).toBe(alphaBefore);
    expect(digestOf('beta')).not.toBe(betaBefore);
  });

  it('orders files by code unit, not by locale, so the digest is the same on every machine', () => {
    // Prepare: 'B.py' sorts before 'a.py' by code unit but after it in most locales.
    const root = makeTempPset({ ...goodPaperFiles(), 'alpha/B.py': 'b = 1\n', 'alpha/a.py': 'a = 1\n' });
    const digest = readPset(root, { displayBase: root }).pset.papers[0].digest;
    const original = String.prototype.localeCompare;
    let reversed: string;

    // Act: a locale that orders the other way round must not change the digest.
    String.prototype.localeCompare = function (this: string, that: string) {
      return -original.call(this, that);
    } as typeof original;
    try {
      reversed = readPset(root, { displayBase: root }).pset.papers[0].digest;
    } finally {
      String.prototype.localeCompare = original;
    }

    // Assess
    expect(reversed).toBe(digest);
  });
});

describe('readPset: the bundled examples/pset-mini', () => {
  it('validates with no problem and holds at least 20 snippets', () => {
    // Act
    const { pset, problems } = readPset(PSET_MINI);

    // Assess
    expect(problems.map(formatProblem)).toEqual([]);
    expect(pset.papers.map((p) => p.meta.id).sort()).toEqual(['adamlite', 'grouprms', 'smoothfocal', 'temperedattn']);
    const snippets = pset.papers.flatMap((p) => p.snippets);
    expect(snippets.length).toBeGreaterThanOrEqual(20);
    expect(snippets.every((s) => s.loc > 0)).toBe(true);
  });
});
