/**
 * Text from a run (a model id from a replay file, a completion, the test's output) carrying
 * terminal escape sequences, spreadsheet formulas and markup: every command that prints it
 * or writes it shows it inert (docs/security.md, "Output that cannot act").
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rcb, tempDir } from '../helpers/cli';

jest.setTimeout(300_000);

/** OSC 52 (clipboard write), BEL, a formula start and markup in the model's id. */
const MODEL = '=HYPERLINK("x")\u001b]52;c;ZXZpbA==\u0007\u009b2J<img src=x onerror=alert(1)>*team*';
/** An answer whose test prints an OSC title, a screen clear and an 8-bit CSI, then fails with an OSC 52. */
const COMPLETION = [
  '```python',
  "        print('\\x1b]0;pwned\\x07\\x1b[2J\\x9b', flush=True)",
  "        raise RuntimeError('\\x1b]52;c;ZXZpbA==\\x07')",
  '```',
  '',
].join('\n');
/** Any C0 control but newline and tab, DEL, or a C1 control. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for exactly these
const ACTIVE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

let dir: string;
let run: string;
let runOutput: string;

beforeAll(() => {
  dir = tempDir();
  const replay = join(dir, 'answers.jsonl');
  writeFileSync(replay, `${JSON.stringify({ paper: 'adamlite', snippet: 'state init', model: MODEL, sample: 0, completion: COMPLETION })}\n`);
  run = join(dir, 'run');
  const r = rcb(['run', '--model', `replay:${replay}`, '--papers', 'adamlite', '--skip-env-check', '--out', run]);
  expect([r.status, r.stderr.slice(-500)]).toEqual([0, expect.any(String)]);
  runOutput = `${r.stdout}${r.stderr}`;
});

describe('output that cannot act', () => {
  it('rcb run prints its progress, notes and leaderboard with no control character of the run', () => {
    expect(runOutput).toContain('\\u001b]52;c;ZXZpbA==\\u0007');
    expect(runOutput).not.toMatch(ACTIVE);
  });

  it.each([
    ['show', () => ['show', run, '--paper', 'adamlite', '--snippet', 'state init']],
    ['report (table)', () => ['report', run]],
    ['report (markdown)', () => ['report', run, '--format', 'markdown']],
    ['report (json)', () => ['report', run, '--format', 'json']],
    ['runs', () => ['runs', join(dir)]],
    ['compare', () => ['compare', run, run]],
  ])('rcb %s prints no control character of the run', (_name, args) => {
    // Act
    const r = rcb(args());
    // Assess: the escape is shown, not sent.
    expect(`${r.stdout}${r.stderr}`).not.toMatch(ACTIVE);
    expect(`${r.stdout}${r.stderr}`).toContain('ZXZpbA==');
  });

  it('rcb show prints the test output with its escapes visible', () => {
    const r = rcb(['show', run, '--paper', 'adamlite', '--snippet', 'state init']);
    expect(r.stdout).toContain('RuntimeError');
    expect(r.stdout).not.toMatch(ACTIVE);
  });

  it('neutralises a CSV cell that starts with a formula character', () => {
    // Act
    const r = rcb(['report', run, '--format', 'csv']);
    // Assess: every cell of the model column starts with the neutralising quote, none with "=".
    expect(r.status).toBe(0);
    const cells = r.stdout.trim().split('\n').slice(1);
    expect(cells.length).toBeGreaterThan(0);
    for (const line of cells) expect(line).toMatch(/^[^,]*,[^,]*,"'=HYPERLINK\(""x""\)/);
    expect(r.stdout).not.toMatch(ACTIVE);
  });

  it('escapes HTML and markdown specials in a markdown report', () => {
    const r = rcb(['report', run, '--format', 'markdown']);
    expect(r.stdout).not.toContain('<img');
    expect(r.stdout).toContain('&lt;img src=x onerror=alert(1)&gt;\\*team\\*');
  });

  it('rcb export writes logs with no raw control character', () => {
    // Act
    const out = join(dir, 'inspect');
    const r = rcb(['export', run, '--format', 'inspect', '--out', out]);
    // Assess
    expect([r.status, r.stderr]).toEqual([0, expect.any(String)]);
    expect(r.stdout + r.stderr).not.toMatch(ACTIVE);
    const files = readdirSync(out);
    expect(files).toHaveLength(1);
    const text = readFileSync(join(out, files[0]), 'utf8');
    expect(text).not.toMatch(ACTIVE);
    expect(JSON.parse(text).eval.model).toBe(MODEL);
  });
});
