/**
 * `rcb run --subset`, `rcb report --subset-file` and a screening sweep as a user runs them, on
 * the bundled pset with offline models: the subset run plans only the subset's tasks under
 * another run id, its report estimates the full-set score, a subset for another pset is refused
 * naming the file, and the sweep runs the full set only for the model its screening keeps.
 */
import { appendFileSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPset } from '../../core/pset/read-pset';
import { importOverallStats } from '../../core/report/official';
import { verdictMatrix } from '../../core/subset/matrix';
import { buildSubset, serializeSubset } from '../../core/subset/subset-file';
import { PSET_MINI, rcb, tempDir } from '../helpers/cli';

const dir = tempDir('rcb-subset-run-');
const official = join(dir, 'overall_stats.json');
const subsetFile = join(dir, 'subset.json');
const { pset } = readPset(PSET_MINI);
const tasks = pset.papers.flatMap((p) => p.snippets.map((s) => ({ paper: p.meta.id, snippet: s.name, loc: s.loc })));

beforeAll(() => {
  // Six models, model i passing a rising share of the tasks.
  const results: Record<string, { paper_metadata: object; results: Record<string, { results: Record<string, object[]> }> }> = {};
  for (let i = 0; i < 6; i++) {
    tasks.forEach((t, j) => {
      const passed = j * 6 < (i + 1) * tasks.length && (i + j) % 3 !== 0;
      const paper = (results[t.paper] ??= { paper_metadata: {}, results: {} });
      (paper.results[`m${i}`] ??= { results: {} }).results[t.snippet] = [
        { snippet_code_line_count: t.loc, completion_idx: 0, passed, exit_code: passed ? 0 : 1 },
      ];
    });
  }
  writeFileSync(official, JSON.stringify({ results }));
  const m = verdictMatrix([{ source: official, imported: importOverallStats(readFileSync(official, 'utf8'), official) }]);
  writeFileSync(
    subsetFile,
    serializeSubset(buildSubset(m, { digest: pset.digest, papers: pset.papers.map((p) => p.meta.id) }, 6, { seed: 0, excludedModels: [] })),
  );
});

const runId = (d: string) => JSON.parse(readFileSync(join(d, 'run.json'), 'utf8')).runId as string;

describe('rcb run --subset and rcb report', () => {
  const out = join(dir, 'run-subset');

  it('runs only the subset tasks under its own run id, and the report estimates the full-set score', () => {
    const r = rcb(['run', '--subset', subsetFile, '--model', 'oracle', '--model', 'empty', '--skip-env-check', '--out', out]);
    expect(r.stdout + r.stderr).toContain('run succeeded');
    expect(r.status).toBe(0);
    // The leaderboard the run prints already has the estimate.
    expect(r.stdout + r.stderr).toContain('estimated full-set scaled pass@1 (ESTIMATE, from the subset):');
    const j = JSON.parse(rcb(['report', out, '--format', 'json']).stdout);
    expect(j.run.spec.subset).toEqual({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), source: subsetFile, size: 6 });
    expect(j.models.map((m: { tasks: number }) => m.tasks)).toEqual([6, 6]);
    const oracle = j.models.find((m: { model: string }) => m.model === 'oracle');
    const empty = j.models.find((m: { model: string }) => m.model === 'empty');
    expect(oracle.estimatedFull).toMatchObject({ estimate: true, subsetScore: 100, observedTasks: 6, missingTasks: 0 });
    expect(oracle.estimatedFull.ci.low).toBeLessThanOrEqual(oracle.estimatedFull.mean);
    // Every judged subset task passed: nothing bounds it above what the fitted models reached, so the interval reaches 100.
    expect(oracle.estimatedFull.ci.high).toBe(100);
    expect(empty.estimatedFull.subsetScore).toBe(0);
    expect(empty.estimatedFull.mean).toBeLessThan(oracle.estimatedFull.mean);
    for (const format of ['table', 'markdown', 'csv', 'html']) {
      const rep = rcb(['report', out, '--format', format]);
      expect(rep.status).toBe(0);
      expect(rep.stdout).toContain('ESTIMATE, not a measurement');
    }
    // The full run of the same flags is another run.
    const full = rcb(['run', '--model', 'oracle', '--model', 'empty', '--skip-env-check', '--out', join(dir, 'run-full')]);
    expect(full.status).toBe(0);
    expect(runId(join(dir, 'run-full'))).not.toBe(runId(out));
  });

  it('refuses a subset for another pset, or a file that is not there, naming it', () => {
    const other = join(dir, 'pset-other');
    cpSync(PSET_MINI, other, { recursive: true });
    const paper = pset.papers[0];
    appendFileSync(join(other, paper.meta.id, paper.annotatedFiles[0].path), '\n# changed\n');
    const r = rcb(['run', '--subset', subsetFile, '--pset', other, '--skip-env-check', '--out', join(dir, 'refused')]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`rcb: --subset ${subsetFile}: made for the pset with digest ${pset.digest.slice(0, 12)}`);
    // A pset without the subset's papers: one line naming the subset and both digests, not one per paper blamed on --papers.
    const bare = join(dir, 'pset-without');
    cpSync(PSET_MINI, bare, { recursive: true });
    const papersYaml = join(bare, 'papers.yaml');
    const keep = pset.papers[0].meta.id;
    const text = readFileSync(papersYaml, 'utf8');
    const kept = text.split(/\n(?=- )/).filter((block, i) => i === 0 || block.includes(`id: ${keep}`));
    writeFileSync(papersYaml, kept.join('\n'));
    const wrong = rcb(['run', '--subset', subsetFile, '--pset', bare, '--skip-env-check', '--out', join(dir, 'refused')]);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).not.toContain('--papers');
    expect(wrong.stderr.trim().split('\n')).toHaveLength(1);
    expect(wrong.stderr).toMatch(
      new RegExp(
        `^rcb: --subset ${subsetFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: made for the pset with digest ${pset.digest.slice(0, 12)}… \\(\\d+ paper\\(s\\)\\), but the pset at ${bare.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(digest [0-9a-f]{12}…\\) lacks \\d+ of them`,
      ),
    );
    const missing = rcb(['run', '--subset', join(dir, 'nope.json'), '--out', join(dir, 'refused')]);
    expect(missing.stderr).toContain(`rcb: --subset ${join(dir, 'nope.json')} does not exist`);
  });

  it('--subset-file applies a subset to an imported official run, which records no pset digest', () => {
    const imp = join(dir, 'imported');
    expect(rcb(['import-official', official, '--out', imp]).status).toBe(0);
    const j = JSON.parse(rcb(['report', imp, '--format', 'json', '--subset-file', subsetFile]).stdout);
    expect(j.estimatedFull.subset.source).toBe(subsetFile);
    expect(j.models).toHaveLength(6);
    for (const m of j.models) expect(m.estimatedFull).toMatchObject({ estimate: true, observedTasks: 6 });
    const refused = rcb(['report', join(dir, 'run-full'), '--subset-file', join(dir, 'nope.json')]);
    expect(refused.stderr).toContain(`rcb: --subset-file ${join(dir, 'nope.json')} does not exist`);
  });
});

describe('a sweep with a screening stage', () => {
  const sweepFile = join(dir, 'screen.yaml');
  beforeAll(() => {
    writeFileSync(
      sweepFile,
      [
        `pset: ${PSET_MINI}`,
        'out: swept',
        'screening:',
        '  subset: subset.json',
        '  keep: { threshold: 50 }',
        'models:',
        '  - id: oracle',
        '  - id: empty',
        '',
      ].join('\n'),
    );
  });

  it('plan shows both stages and the sweep without screening', () => {
    const r = rcb(['sweep', 'plan', sweepFile]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`stage 1, screening: every model on the 6 task(s) of the subset ${subsetFile} (of ${tasks.length} in the full set)`);
    expect(r.stdout).toMatch(/^oracle +interactive +6 /m);
    expect(r.stdout).toContain(`stage 2: the full set for the models whose estimated interval reaches 50 points (at most 2 of 2)`);
    expect(r.stdout).toContain('the same sweep without screening (every model on the full set)');
  });

  it('run screens on the subset, then runs the full set for the model kept only', () => {
    const r = rcb(['sweep', 'run', sweepFile, '--executor', 'cold']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^ {2}oracle: estimated ~[\d.]+ \[[\d.]+, [\d.]+\] \(estimate\); kept: its interval reaches 50\.00$/m);
    expect(r.stdout).toMatch(/^ {2}empty: estimated ~[\d.]+ \[[\d.]+, [\d.]+\] \(estimate\); dropped: its interval stays below 50\.00$/m);
    expect(r.stderr).toContain('stage 2: 1 model(s) on the full set (1 dropped)');
    const index = JSON.parse(readFileSync(join(dir, 'swept', 'sweep.json'), 'utf8'));
    expect(index.runs).toHaveLength(2);
    const stage2 = JSON.parse(rcb(['report', join(dir, 'swept', index.runs[1].dir), '--format', 'json']).stdout);
    expect(stage2.models.map((m: { model: string; tasks: number }) => [m.model, m.tasks])).toEqual([['oracle', tasks.length]]);
  });

  it('is refused in the cloud, naming the line', () => {
    const r = rcb(['sweep', 'run', sweepFile, '--emulate']);
    expect(r.status).not.toBe(0);
    // The line of the screening block's first entry.
    expect(r.stderr).toContain(`${sweepFile}:4: screening runs on this machine only`);
  });
});
