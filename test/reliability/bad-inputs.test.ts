/**
 * Bad inputs to `rcb run`: every malformed pset (SPEC 2 and 3), malformed replay file and
 * refused flag is rejected with exit 1 and a message the user can act on (`path:line:
 * message` where there is a line), and leaves nothing behind: no run directory, no store,
 * no run.json, nothing new next to the pset.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { goodPaperFiles, makeTempPset, MODEL_PY, removeTempPsets, writeFiles } from '../fixtures/core/temp-pset';
import { tempDir } from '../helpers/cli';
import { recordCount } from './reliability-summary';
import { mapLimit, startRcb } from './run-cli';

// The deadline of a hang, not a bound on speed: on a loaded machine the 32 starts of rcb take minutes.
jest.setTimeout(900_000);

interface BadInput {
  name: string;
  /** Files changed from the good one-paper pset (null deletes one). */
  changes?: Record<string, string | null>;
  /** A replay file (written into the pset folder as bad.jsonl) given as `--model replay:bad.jsonl`. */
  replay?: string;
  /** Extra flags of the run. */
  flags?: string[];
  /** Extra environment of the run. */
  env?: NodeJS.ProcessEnv;
  /** A line the error output must hold. */
  expected: string | RegExp;
}

const yamlOf = (...lines: string[]) => `${lines.join('\n')}\n`;
const alphaFiles = Object.keys(goodPaperFiles()).filter((k) => k.startsWith('alpha/'));
const GOOD_REPLAY = JSON.stringify({ paper: 'alpha', snippet: 'inner', model: 'r', sample: 0, completion: '```python\nb = 1\n```' });
/** A paid model on a local address nothing listens on; the run must stop before any call. */
const MODELS_FILE = yamlOf(
  'models:',
  '  - id: keyless',
  '    provider: openai-compatible',
  '    model: keyless',
  '    base_url: http://127.0.0.1:9/v1',
  '    api_key_env: RCB_TEST_KEYLESS_KEY',
  '    params: { max_output_tokens: 100 }',
  '    prices: { input: 1, cached_input: 0.1, output: 2, as_of: "2026-01-01" }',
  '    knowledge_cutoff: "2024-01"',
  '    context_window: 10000',
);

const CASES: BadInput[] = [
  // SPEC 3: snippet markers, each at the annotated file and line.
  {
    name: 'close with nothing open',
    changes: { 'alpha/model.py': `${MODEL_PY}# </paper2code name="ghost">\n` },
    expected: 'alpha/model.py:12: close marker for "ghost" with no snippet open',
  },
  {
    name: 'close naming another snippet',
    changes: { 'alpha/model.py': MODEL_PY.replace('# </paper2code name="inner">', '# </paper2code name="outer">') },
    expected: 'alpha/model.py:9: close marker for "outer" but the innermost open snippet is "inner" (opened at line 7)',
  },
  {
    name: 'indentation mismatch',
    changes: { 'alpha/model.py': MODEL_PY.replace('    # </paper2code name="inner">', '# </paper2code name="inner">') },
    expected: 'alpha/model.py:9: close marker for "inner" is indented differently from its open marker at line 7',
  },
  {
    name: 'snippet never closed',
    changes: { 'alpha/model.py': MODEL_PY.replace('    # </paper2code name="outer">\n', '') },
    expected: 'alpha/model.py:5: snippet "outer" is never closed',
  },
  {
    name: 'duplicate snippet name',
    changes: { 'alpha/model.py': `${MODEL_PY}\ndef g():\n    # <paper2code name="inner">\n    return 2\n    # </paper2code name="inner">\n` },
    expected: 'alpha/model.py:14: duplicate snippet name "inner" (first opened at line 7)',
  },
  {
    name: 'snippet with no code lines',
    changes: { 'alpha/model.py': MODEL_PY.replace('b = a * 2  # double', '# only a comment') },
    expected: 'alpha/model.py:7: snippet "inner" has no code lines',
  },
  {
    name: 'snippet name in two files of a paper',
    changes: {
      'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: [model.py, other.py]'),
      'alpha/other.py': yamlOf('x = 0', '# <paper2code name="inner">', 'y = 1', '# </paper2code name="inner">'),
    },
    expected: 'alpha/other.py:2: duplicate snippet name "inner" (also in model.py)',
  },
  // SPEC 2: papers.yaml and the files it names.
  {
    name: 'YAML syntax error',
    changes: { 'papers.yaml': yamlOf('# papers', '- id: alpha', '\tannotated_file_paths: model.py') },
    expected: /^papers\.yaml:3: YAML: /m,
  },
  {
    name: 'papers.yaml not a list',
    changes: { 'papers.yaml': yamlOf('id: alpha', 'annotated_file_paths: model.py') },
    expected: 'papers.yaml:1: papers.yaml must be a list of papers',
  },
  { name: 'papers.yaml missing', changes: { 'papers.yaml': null }, expected: 'papers.yaml:0: papers.yaml is missing' },
  {
    name: 'entry without id',
    changes: { 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '- title: Nameless', '  annotated_file_paths: model.py') },
    expected: 'papers.yaml:3: paper entry has no id',
  },
  {
    name: 'entry not a mapping',
    changes: { 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '- just a string') },
    expected: 'papers.yaml:3: each paper must be a mapping with at least id and annotated_file_paths',
  },
  {
    name: 'duplicate paper id',
    changes: { 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '- id: alpha', '  annotated_file_paths: model.py') },
    expected: 'papers.yaml:3: duplicate paper id "alpha" (first at line 1)',
  },
  {
    name: 'paper folder missing',
    changes: Object.fromEntries(alphaFiles.map((k) => [k, null])),
    expected: 'papers.yaml:1: paper "alpha": paper folder alpha is missing',
  },
  {
    name: 'paper text missing',
    changes: { 'alpha/paper2code_paper.tex': null },
    expected: 'papers.yaml:1: paper "alpha": paper text alpha/paper2code_paper.tex (or .md) is missing',
  },
  {
    name: 'test entry point missing',
    changes: { 'alpha/paper2code_test.py': null },
    expected: 'papers.yaml:1: paper "alpha": test entry point alpha/paper2code_test.py is missing',
  },
  { name: 'annotated file missing', changes: { 'alpha/model.py': null }, expected: 'papers.yaml:1: paper "alpha": annotated file alpha/model.py is missing' },
  { name: 'context file missing', changes: { 'alpha/utils.py': null }, expected: 'papers.yaml:1: paper "alpha": context file alpha/utils.py is missing' },
  {
    name: 'date not YYYY-MM-DD',
    changes: { 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '  first_commit_date: March 2024') },
    expected: 'papers.yaml:1: paper "alpha": first_commit_date "March 2024" is not a YYYY-MM-DD date',
  },
  {
    name: 'file listed twice',
    changes: { 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '  context_file_paths: [" utils.py", "utils.py  "]') },
    expected: 'papers.yaml:1: paper "alpha": context_file_paths lists utils.py more than once',
  },
  {
    name: 'context_file_paths of another type',
    changes: { 'papers.yaml': yamlOf('- id: alpha', '  annotated_file_paths: model.py', '  context_file_paths: {a: 1}') },
    expected: 'papers.yaml:1: paper "alpha": context_file_paths must be null, a string or a list of strings',
  },
  {
    name: '--papers naming an unlisted paper',
    flags: ['--papers', 'alpha,zeta'],
    // The flag was wrong, not the pset: blamed on --papers, not on papers.yaml.
    expected: /^--papers: unknown paper "zeta" in the pset at \S+ \(papers: alpha\)$/m,
  },
  {
    name: '--papers with a misspelt paper id',
    flags: ['--papers', 'alhpa'],
    expected: /^--papers: unknown paper "alhpa" in the pset at \S+; did you mean "alpha"\? \(papers: alpha\)$/m,
  },
  { name: '--pset naming no folder', flags: ['--pset', 'no-such-pset'], expected: /the pset folder \/\S+\/no-such-pset does not exist/ },
  // Replay files: the file and the line.
  { name: 'replay line not JSON', replay: `${GOOD_REPLAY}\n{"paper": "alpha",\n`, expected: /bad\.jsonl:2: not JSON \(/ },
  {
    name: 'replay line missing a field',
    replay: `${GOOD_REPLAY}\n\n${JSON.stringify({ paper: 'alpha', snippet: 'inner', model: 'r', completion: '' })}\n`,
    expected: /bad\.jsonl:3: sample: Required/,
  },
  {
    name: 'replay line with a misspelt snippet',
    replay: `${GOOD_REPLAY}\n${JSON.stringify({ paper: 'alpha', snippet: 'iner', model: 'r', sample: 0, completion: '' })}\n`,
    expected: /bad\.jsonl:2: paper "alpha" has no snippet "iner"; did you mean "inner"\?/,
  },
  {
    name: 'replay line with a negative sample',
    replay: `${JSON.stringify({ paper: 'alpha', snippet: 'inner', model: 'r', sample: -1, completion: '' })}\n`,
    expected: /bad\.jsonl:1: sample: /,
  },
  // Flags refused after the pset and models are read: still nothing on disk.
  { name: 'unknown executor', flags: ['--executor', 'lukewarm'], expected: '--executor must be warm or cold (got "lukewarm")' },
  { name: 'unknown model', flags: ['--model', 'no-such-model'], expected: /^--model: unknown model "no-such-model" in the model registry/m },
  {
    name: 'paid model without its key',
    flags: ['--model', 'keyless', '--models-file', 'models.yaml', '--concurrency', '2'],
    env: { RCB_TEST_KEYLESS_KEY: '' },
    expected: 'missing API keys: set RCB_TEST_KEYLESS_KEY for keyless',
  },
  {
    name: 'paid model with a bad --concurrency',
    flags: ['--model', 'keyless', '--models-file', 'models.yaml', '--concurrency', '0'],
    env: { RCB_TEST_KEYLESS_KEY: 'k' },
    expected: '--concurrency must be a whole number >= 1 (got "0")',
  },
];

interface Outcome {
  name: string;
  status: number | null;
  stderr: string;
  /** What the run left: the --out folder's existence, and files new in the pset folder. */
  outExists: boolean;
  newFiles: string[];
}

afterAll(removeTempPsets);

describe('rcb run on bad inputs', () => {
  const outcomes = new Map<string, Outcome>();

  beforeAll(async () => {
    // Act: every case in its own pset folder, two CLI processes at a time (each takes ~1 s to start).
    const results = await mapLimit(CASES, 2, async (c): Promise<Outcome> => {
      const files = goodPaperFiles();
      const changes = c.changes ?? {};
      const root = makeTempPset(Object.fromEntries(Object.entries(files).filter(([k]) => changes[k] !== null)));
      writeFiles(root, Object.fromEntries(Object.entries(changes).filter((e): e is [string, string] => e[1] !== null)));
      writeFileSync(join(root, 'models.yaml'), MODELS_FILE);
      if (c.replay !== undefined) writeFileSync(join(root, 'bad.jsonl'), c.replay);
      const before = readdirSync(root, { recursive: true }).map(String).sort();
      const out = join(tempDir('rcb-bad-input-'), 'run');
      const model = c.replay !== undefined ? ['--model', 'replay:bad.jsonl'] : [];
      // From inside the pset folder, as a user would: problems are named relative to it.
      const { done } = startRcb(['run', '--pset', '.', ...model, ...(c.flags ?? []), '--out', out], { cwd: root, env: c.env });
      const r = await done;
      const after = readdirSync(root, { recursive: true }).map(String).sort();
      return { name: c.name, status: r.status, stderr: r.stderr, outExists: existsSync(out), newFiles: after.filter((f) => !before.includes(f)) };
    });
    for (const r of results) outcomes.set(r.name, r);
  });

  /** Cases that passed the check below, for the reliability summary. */
  let rejected = 0;

  it.each(CASES.map((c) => [c.name, c]))('%s: exit 1 with the problem named, nothing written', (_name, c) => {
    const o = outcomes.get(c.name)!;
    // Assess, with the case's stderr in the failure message.
    expect({ status: o.status, stderr: o.stderr }).toEqual({ status: 1, stderr: expect.anything() });
    const lines = o.stderr.split('\n').map((l) => l.replace(/^rcb: /, ''));
    if (typeof c.expected === 'string') expect(lines).toContain(c.expected);
    else expect(lines.join('\n')).toMatch(c.expected);
    expect(o.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(o.outExists).toBe(false);
    expect(o.newFiles).toEqual([]);
    rejected++;
  });

  afterAll(() => {
    recordCount('bad-inputs', `bad-inputs-${process.env.RCB_TEST_HOST ?? 'local'}`, rejected, CASES.length);
  });
});
