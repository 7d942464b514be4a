/**
 * `rcb subset build|check|show` as a user runs them, on the bundled pset with verdicts of eight
 * simulated models written as an overall_stats.json: the subset file names the pset digest and
 * passes `show` against that pset, is refused for another, and every bad input is an error
 * naming the file or the flag.
 */
import { cpSync, existsSync, readFileSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { seededRandom } from '../../core/report/bootstrap';
import { readPset } from '../../core/pset/read-pset';
import { PSET_MINI, rcb, tempDir } from '../helpers/cli';

const dir = tempDir('rcb-subset-');
const official = join(dir, 'overall_stats.json');
const out = join(dir, 'sub', 'subset.json');
const { pset } = readPset(PSET_MINI);
const tasks = pset.papers.flatMap((p) => p.snippets.map((s) => ({ paper: p.meta.id, snippet: s.name, loc: s.loc })));

beforeAll(() => {
  // Eight models of rising ability on tasks of varied difficulty (a 2PL with a = 2).
  const random = seededRandom(11);
  const difficulty = tasks.map(() => 3 * random() - 1.5);
  const results: Record<string, { paper_metadata: object; results: Record<string, { results: Record<string, object[]> }> }> = {};
  for (let i = 0; i < 8; i++) {
    const ability = -2 + (4 * i) / 7;
    tasks.forEach((t, j) => {
      const passed = random() < 1 / (1 + Math.exp(-2 * (ability - difficulty[j])));
      const paper = (results[t.paper] ??= { paper_metadata: {}, results: {} });
      (paper.results[`model-${i}`] ??= { results: {} }).results[t.snippet] = [
        { snippet_code_line_count: t.loc, completion_idx: 0, passed, exit_code: passed ? 0 : 1 },
      ];
    });
  }
  writeFileSync(official, JSON.stringify({ results }));
});

describe('rcb subset', () => {
  it('build writes a subset file for the pset the verdicts were made on, and show checks it against that pset', () => {
    const r = rcb(['subset', 'build', '--official', official, '--size', '8', '--exclude-model', 'model-3', '--seed', '2', '--pset', PSET_MINI, '--out', out]);
    expect(r.stderr).toMatch(/wrote .*subset\.json: 8 of 28 tasks/);
    expect(r.status).toBe(0);
    const subset = JSON.parse(readFileSync(out, 'utf8'));
    expect(subset.schema).toBe('rcb-subset/1');
    expect(subset.pset.digest).toBe(pset.digest);
    expect(subset.tasks).toHaveLength(8);
    expect(subset.items).toHaveLength(tasks.length);
    expect(subset.models.map((m: { id: string }) => m.id)).toEqual(['model-0', 'model-1', 'model-2', 'model-4', 'model-5', 'model-6', 'model-7']);
    expect(subset.excludedModels).toEqual(['model-3']);
    expect(subset.method.seed).toBe(2);
    expect(existsSync(`${out}.tmp`)).toBe(false);

    const show = rcb(['subset', 'show', out, '--pset', PSET_MINI]);
    expect(show.status).toBe(0);
    expect(show.stdout).toMatch(/: 8 of 28 tasks \(\d+ of \d+ LoC, [\d.]+%\) of the pset at /);
    expect(
      show.stdout
        .trim()
        .split('\n')
        .filter((l) => / LoC$/.test(l)),
    ).toHaveLength(8);
  });

  it('show refuses the subset for another pset, naming the file', () => {
    const other = join(dir, 'pset-other');
    cpSync(PSET_MINI, other, { recursive: true });
    const paper = pset.papers[0];
    appendFileSync(join(other, paper.meta.id, paper.annotatedFiles[0].path), '\n# changed\n');
    const r = rcb(['subset', 'show', out, '--pset', other]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`rcb: ${out}: made for the pset with digest ${pset.digest.slice(0, 12)}`);
    expect(r.stderr).toContain(`but the pset at ${other} has digest`);
  });

  it('check prints the leave-one-model-out table for each size, and JSON with --json', () => {
    const r = rcb(['subset', 'check', '--official', official, '--size', '6,10', '--random-seeds', '3']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^leave-one-model-out over 8 models, 28 tasks/);
    for (const size of [6, 10]) {
      expect(r.stdout).toMatch(new RegExp(`^ +${size}  IRT 2PL, LoC²×variance \\(estimate\\) +[\\d.]+ +[\\d.]+ +[\\d.]+ +[\\d.]+ +[\\d.]+$`, 'm'));
      expect(r.stdout).toMatch(new RegExp(`^ +${size}  random subsets \\(own score, 3 seeds\\) +[\\d.]+`, 'm'));
      expect(r.stdout).toContain(`top 5 models held out, size ${size}`);
    }
    const j = rcb(['subset', 'check', '--official', official, '--size', '6', '--random-seeds', '2', '--json']);
    expect(j.status).toBe(0);
    const report = JSON.parse(j.stdout);
    expect(report.models).toBe(8);
    expect(report.sizes[0].method.heldOut).toHaveLength(8);
    expect(report.sizes[0].random.seeds).toBe(2);
  });

  it('names the file or the flag in every error', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"results": {"p": {"results": {"m": {"results": {"s": [{"passed": true}]}}}}}}');
    const cases: [string[], string][] = [
      [['subset', 'build', '--official', join(dir, 'nope.json'), '--size', '4', '--out', out], `--official ${join(dir, 'nope.json')} does not exist`],
      [
        ['subset', 'build', '--official', bad, '--size', '4', '--out', out],
        `--official ${bad}: results.p.results.m.results.s.0.snippet_code_line_count: Required`,
      ],
      [
        ['subset', 'build', '--official', official, '--size', '99', '--pset', PSET_MINI, '--out', out],
        '--size 99: each size must be an integer from 1 to the 28 tasks',
      ],
      [['subset', 'build', '--official', official, '--size', '4,8', '--pset', PSET_MINI, '--out', out], '--size 4,8: build takes one size'],
      [['subset', 'build', '--official', official, '--size', '4', '--seed', '-1', '--pset', PSET_MINI, '--out', out], '--seed -1: must be an integer'],
      [
        ['subset', 'build', '--official', official, '--size', '4', '--exclude-model', 'gpt-9', '--out', out],
        `--exclude-model gpt-9: no such model in ${official}`,
      ],
      [['subset', 'build', '--official', official, '--official', official, '--size', '4', '--out', out], `${official}: model model-0 is also in ${official}`],
      [['subset', 'check', '--official', official, '--size', '0'], '--size 0: each size must be an integer'],
      [['subset', 'show', join(dir, 'absent.json')], `subset file ${join(dir, 'absent.json')} does not exist`],
      [['subset', 'show', bad, '--pset', PSET_MINI], `${bad}: schema: Invalid literal value`],
    ];
    for (const [args, message] of cases) {
      const r = rcb(args);
      expect({ args, status: r.status, stderr: r.stderr.includes(message) ? message : r.stderr }).toEqual({ args, status: 1, stderr: message });
    }
  });
});
