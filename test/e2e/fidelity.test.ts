/**
 * Verdicts a user can trust, through the CLI: an answer without code is tested as the
 * original harness tested it, and a stored run is rescored from its evidence (rcb rejudge),
 * also when it was written before verdicts kept evidence.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { rcb, REPO, tempDir } from '../helpers/cli';
import { makeTempPset, removeTempPsets } from '../fixtures/core/temp-pset';

const WRONG = join(REPO, 'test', 'fixtures', 'replays', 'wrong-answers.jsonl');

afterAll(removeTempPsets);

/** One paper, two snippets: the test calls `used` and never `unused`, whose function still compiles with its body removed. */
const UNEXERCISED_PSET = {
  'papers.yaml': '- id: beta\n  title: Beta\n  first_commit_date: 2024-03-15\n  annotated_file_paths: model.py\n',
  'beta/paper2code_paper.tex': '\\section{Beta}\nWe add one.\n',
  'beta/model.py': [
    'def used(x):',
    '    # <paper2code name="used">',
    '    return x + 1',
    '    # </paper2code name="used">',
    '',
    '',
    'def unused(x):',
    '    y = x',
    '    # <paper2code name="unused">',
    '    y = y * 2',
    '    # </paper2code name="unused">',
    '    return y',
    '',
  ].join('\n'),
  'beta/paper2code_test.py': [
    'import unittest',
    'from model import used',
    '',
    '',
    'class TestUsed(unittest.TestCase):',
    '    def test_used(self):',
    '        self.assertEqual(used(1), 2)',
    '',
    '',
    'if __name__ == "__main__":',
    '    unittest.main()',
    '',
  ].join('\n'),
};

interface JsonReport {
  models: { model: string; scaled: { mean: number }; pass1: { mean: number }; failures: Record<string, number> }[];
}

function json(args: string[]): JsonReport {
  const r = rcb(args);
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as JsonReport;
}

const byModel = (rep: JsonReport) => Object.fromEntries(rep.models.map((m) => [m.model, m]));

describe('an answer without code', () => {
  it("is tested with the snippet's body removed: a test that does not exercise the snippet passes official and fails strict", () => {
    // Prepare
    const pset = makeTempPset(UNEXERCISED_PSET);
    const out = tempDir();

    // Act
    const r = rcb(['run', '--pset', pset, '--model', 'empty', '--model', 'oracle', '--executor', 'cold', '--skip-env-check', '--out', out]);

    // Assess
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('4 test(s) run');
    const official = byModel(json(['report', out, '--format', 'json', '--judge', 'official']));
    const strict = byModel(json(['report', out, '--format', 'json', '--judge', 'strict']));
    expect(official.empty.pass1.mean).toBe(50);
    expect(official.empty.failures).toEqual({ no_code: 1 });
    expect(strict.empty.pass1.mean).toBe(0);
    expect(strict.empty.failures).toEqual({ no_code: 2 });
    expect(strict.oracle.pass1.mean).toBe(100);
  });
});

describe('rcb rejudge', () => {
  const out = tempDir();

  beforeAll(() => {
    const r = rcb(['run', '--model', 'oracle', '--model', 'empty', '--model', `replay:${WRONG}`, '--timeout', '3', '--skip-env-check', '--out', out]);
    expect(r.status).toBe(0);
  });

  it.each(['strict', 'official'])('gives the scores the run was judged with (%s judge), running no test', (judge) => {
    // Act
    const rejudged = rcb(['rejudge', out, '--format', 'json', '--judge', judge]);

    // Assess
    expect(rejudged.status).toBe(0);
    expect(rejudged.stdout).toBe(rcb(['report', out, '--format', 'json', '--judge', judge]).stdout);
    expect(rejudged.stderr).toMatch(/rejudged (\d+) verdict\(s\) from their evidence, no test run \(0 changed\); 18 kept as stored/);
    expect(Number(/rejudged (\d+)/.exec(rejudged.stderr)![1])).toBe(84 - 18);
  });

  it('still loads a run written before verdicts kept evidence, and keeps its verdicts as judged then', () => {
    // Prepare: the same run as the previous rcb stored it: no evidence, and answers without code failed untested.
    const old = tempDir();
    copyFileSync(join(out, 'rcb.sqlite'), join(old, 'rcb.sqlite'));
    copyFileSync(join(out, 'run.json'), join(old, 'run.json'));
    const copy = new Database(join(old, 'rcb.sqlite'));
    const rows = copy.prepare('SELECT run_id, task_id, record FROM verdicts').all() as { run_id: string; task_id: string; record: string }[];
    const update = copy.prepare('UPDATE verdicts SET record = ? WHERE run_id = ? AND task_id = ?');
    for (const row of rows) {
      const { evidence: _, ...v } = JSON.parse(row.record);
      if (v.failureClass === 'no_code') Object.assign(v, { officialPass: false, executor: 'none', sandbox: 'none', exitCode: null, flags: [] });
      update.run(JSON.stringify(v), row.run_id, row.task_id);
    }
    copy.close();

    // Act
    const report = rcb(['report', old, '--format', 'json', '--judge', 'official']);
    const rejudged = rcb(['rejudge', old, '--format', 'json', '--judge', 'official']);

    // Assess
    expect(report.status).toBe(0);
    expect(rejudged.stdout).toBe(report.stdout);
    expect(rejudged.stderr).toContain('rejudged 0 verdict(s) from their evidence, no test run (0 changed); 84 kept as stored');
    expect(rejudged.stderr).toMatch(/note: 29 answer\(s\) without code were failed by an older rcb without running their test/);
  });
});

describe('a paper whose tests cannot run here', () => {
  // alpha runs; gamma imports a module no environment has.
  const files = {
    ...UNEXERCISED_PSET,
    'papers.yaml': UNEXERCISED_PSET['papers.yaml'] + UNEXERCISED_PSET['papers.yaml'].replace(/beta/g, 'gamma').replace(/Beta/g, 'Gamma'),
    ...Object.fromEntries(
      Object.entries(UNEXERCISED_PSET)
        .filter(([k]) => k.startsWith('beta/'))
        .map(([k, v]) => [k.replace('beta/', 'gamma/'), v]),
    ),
    'gamma/paper2code_test.py': `import rcb_no_such_module_anywhere\n${UNEXERCISED_PSET['beta/paper2code_test.py']}`,
  };

  it('is reported by rcb doctor with its missing module, and its tasks are env_broken in rcb run: untested, out of the scores, named', () => {
    // Prepare
    const pset = makeTempPset(files);
    const cache = tempDir();
    const out = tempDir();

    // Act
    const doctor = rcb(['doctor', '--pset', pset, '--json'], { env: { RCB_CACHE_DIR: cache } });
    const run = rcb(['run', '--pset', pset, '--model', 'oracle', '--executor', 'cold', '--out', out], { env: { RCB_CACHE_DIR: cache } });

    // Assess
    expect(doctor.status).toBe(1);
    expect(JSON.parse(doctor.stdout)).toEqual([
      { paper: 'beta', runs: true, reason: null, note: null },
      { paper: 'gamma', runs: false, reason: 'missing module rcb_no_such_module_anywhere', note: null },
    ]);
    expect(doctor.stderr).toContain('1 of 2 paper(s) run here');
    expect(run.status).toBe(0);
    expect(run.stderr).toContain(
      'env_broken: gamma cannot run here (missing module rcb_no_such_module_anywhere): its 2 task(s) are left untested and out of the scores',
    );
    expect(run.stdout).toContain('2 test(s) run');
    expect(run.stdout).toMatch(/oracle\s+100\.00\s+\[100\.00, 100\.00\]\s+100\.00\s+\[100\.00, 100\.00\]\s+2\s/);
    expect(run.stdout).toContain('note: env_broken: 2 task sample(s) of 1 paper(s)');
    const rep = JSON.parse(rcb(['report', out, '--format', 'json', '--judge', 'official']).stdout) as {
      notes: string[];
      models: { envBroken: number; pending: number }[];
    };
    expect(rep.models[0]).toMatchObject({ envBroken: 2, pending: 0 });
    expect(rep.notes[0]).toContain('gamma (missing module rcb_no_such_module_anywhere)');
    const official = rcb(['report', out, '--format', 'official']);
    expect(JSON.parse(official.stdout).rcb_notes).toEqual(rep.notes);
    const statsFile = join(tempDir(), 'overall_stats.json');
    writeFileSync(statsFile, official.stdout);
    expect(rcb(['import-official', statsFile, '--out', tempDir()]).status).toBe(0);

    // A resume without the check tests gamma's tasks, which then fail as the model's.
    const resumed = rcb(['run', '--pset', pset, '--model', 'oracle', '--executor', 'cold', '--skip-env-check', '--out', out], {
      env: { RCB_CACHE_DIR: cache },
    });
    expect(resumed.stdout).toContain('2 test(s) run');
    const after = JSON.parse(rcb(['report', out, '--format', 'json']).stdout) as {
      notes: string[];
      models: { envBroken: number; failures: Record<string, number> }[];
    };
    expect(after.notes).toEqual([]);
    expect(after.models[0]).toMatchObject({ envBroken: 0, failures: { import: 2 } });
  });

  it("is read from doctor's cache by rcb run, and not checked at all with --skip-env-check", () => {
    // Prepare: a cache that says beta does not run (as a doctor run with another environment would have found).
    const pset = makeTempPset(files);
    const cache = tempDir();
    expect(rcb(['doctor', '--pset', pset, '--papers', 'beta'], { env: { RCB_CACHE_DIR: cache } }).status).toBe(0);
    const file = join(cache, 'environment.json');
    const entries = JSON.parse(readFileSync(file, 'utf8')) as Record<string, { runs: boolean; reason: string | null }>;
    for (const e of Object.values(entries)) Object.assign(e, { runs: false, reason: 'recorded by doctor' });
    writeFileSync(file, JSON.stringify(entries));

    // Act
    const cached = rcb(['run', '--pset', pset, '--papers', 'beta', '--model', 'oracle', '--executor', 'cold', '--out', tempDir()], {
      env: { RCB_CACHE_DIR: cache },
    });
    const skipped = rcb(['run', '--pset', pset, '--papers', 'beta', '--model', 'oracle', '--executor', 'cold', '--skip-env-check', '--out', tempDir()], {
      env: { RCB_CACHE_DIR: cache },
    });

    // Assess
    expect(cached.stderr).toContain('env_broken: beta cannot run here (recorded by doctor)');
    expect(cached.stdout).toContain('0 test(s) run');
    expect(skipped.stderr).not.toContain('env_broken');
    expect(skipped.stdout).toContain('2 test(s) run');
  });
});
