/**
 * Inputs that would exhaust the machine or give nonsense are refused naming the flag, the file
 * and the field, with exit 1 and no stack trace (docs/running-locally.md, "Limits").
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { seededRandom } from '../../core/report/bootstrap';
import { readPset } from '../../core/pset/read-pset';
import { PSET_MINI, rcb, tempDir } from '../helpers/cli';

jest.setTimeout(300_000);

const dir = tempDir('rcb-bounds-');
const official = join(dir, 'overall_stats.json');
const subset = join(dir, 'subset.json');

/** No stack trace: no "    at " frame and no "internal error". */
function expectClean(stderr: string): void {
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr).not.toContain('internal error');
}

beforeAll(() => {
  // Six simulated models on the bundled pset, as an overall_stats.json, and a subset built from them.
  const { pset } = readPset(PSET_MINI);
  const random = seededRandom(3);
  const results: Record<string, { paper_metadata: object; results: Record<string, { results: Record<string, object[]> }> }> = {};
  for (let i = 0; i < 6; i++) {
    for (const p of pset.papers) {
      for (const s of p.snippets) {
        const passed = random() < (i + 1) / 7;
        const paper = (results[p.meta.id] ??= { paper_metadata: {}, results: {} });
        (paper.results[`model-${i}`] ??= { results: {} }).results[s.name] = [
          { snippet_code_line_count: s.loc, completion_idx: 0, passed, exit_code: passed ? 0 : 1 },
        ];
      }
    }
  }
  writeFileSync(official, JSON.stringify({ results }));
  const r = rcb(['subset', 'build', '--official', official, '--size', '6', '--pset', PSET_MINI, '--out', subset]);
  expect([r.status, r.stderr]).toEqual([0, expect.any(String)]);
});

describe('bounds on flags', () => {
  it.each([
    [['--samples', '1000000000'], '--samples must be at most 1000 (got "1000000000")'],
    [['--timeout', '1e308'], '--timeout must be at most 86400 (got "1e308")'],
    [['--jobs', '100000'], '--jobs must be at most 1024 (got "100000")'],
  ])('rcb run %j is refused naming the flag, leaving no run folder', (flags, message) => {
    const out = join(tempDir(), 'run');
    const r = rcb(['run', '--model', 'oracle', '--papers', 'adamlite', ...flags, '--out', out]);
    expect([r.status, r.stderr]).toEqual([1, `rcb: ${message}\n`]);
    expect(existsSync(out)).toBe(false);
  });
});

describe('bounds on files', () => {
  it('refuses samples past the maximum in a sweep file, naming the file and line', () => {
    const file = join(dir, 'samples.yaml');
    writeFileSync(file, 'samples: 1000000000\nmodels:\n  - id: oracle\n');
    const r = rcb(['sweep', 'plan', file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${file}:1: samples: Number must be less than or equal to 1000`);
    expectClean(r.stderr);
  });

  it('refuses a YAML alias bomb in a sweep file', () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    let prev = 'a';
    for (const n of 'bcdefghi') {
      lines.push(`${n}: &${n} [${Array(10).fill(`*${prev}`).join(',')}]`);
      prev = n;
    }
    const file = join(dir, 'bomb.yaml');
    writeFileSync(file, `${lines.join('\n')}\nmodels:\n  - id: oracle\n`);
    const r = rcb(['sweep', 'plan', file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${file}:1: more than 100 alias expansions`);
    expectClean(r.stderr);
  });

  it('refuses a YAML alias bomb in papers.yaml', () => {
    const root = tempDir();
    const lines = ['- id: x', '  annotated_file_paths: a.py', '  j0: &a0 ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++)
      lines.push(
        `  j${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(',')}]`,
      );
    writeFileSync(join(root, 'papers.yaml'), `${lines.join('\n')}\n`);
    const r = rcb(['validate', '--pset', root], { cwd: root });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('papers.yaml:1: more than 100 alias expansions');
  });

  it.each([
    ['method.grid.points', (s: any) => (s.method.grid.points = 2e8), 'Number must be less than or equal to 100001'],
    ['items.0.a', (s: any) => (s.items[0].a = 1e308), 'Number must be less than or equal to 1000'],
    ['method.inflation', (s: any) => (s.method.inflation = Number.POSITIVE_INFINITY), 'Number must be finite'],
    ['method.priorSd', (s: any) => (s.method.priorSd = 1e300), 'Number must be less than or equal to 1000'],
  ])('refuses a subset file with %s out of range, naming the field', (field, change, message) => {
    // Prepare: Infinity is written as 1e999, as a hand edit would.
    const s = JSON.parse(readFileSync(subset, 'utf8'));
    change(s);
    const file = join(dir, `${field}.json`);
    writeFileSync(
      file,
      JSON.stringify(s).replace(/null|1e\+300/, (m) => (m === 'null' ? '1e999' : m)),
    );
    // Act
    const r = rcb(['subset', 'show', file, '--pset', PSET_MINI]);
    // Assess
    expect([r.status, r.stderr]).toEqual([1, `rcb: ${file}: ${field}: ${message}\n`]);
  });

  it('refuses subset build --out on a folder and leaves no temporary file', () => {
    const folder = join(dir, 'a-folder');
    mkdirSync(folder);
    const r = rcb(['subset', 'build', '--official', official, '--size', '6', '--pset', PSET_MINI, '--out', folder]);
    expect([r.status, r.stderr.split('\n').slice(-2)]).toEqual([1, [`rcb: --out ${folder}: is a folder; give the name of a file to write`, '']]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('names a replay file too large to read', () => {
    // A sparse 600 MB file: no disk used.
    const file = join(dir, 'huge.jsonl');
    writeFileSync(file, '');
    truncateSync(file, 600 * 2 ** 20);
    const out = join(dir, 'huge-run');
    const r = rcb(['run', '--model', `replay:${file}`, '--papers', 'adamlite', '--out', out]);
    expect([r.status, r.stderr]).toEqual([1, `rcb: ${file}: the replay file is 600 MB, more than the 256 MB rcb reads (split it by model)\n`]);
    expect(existsSync(out)).toBe(false);
  });
});
