/**
 * Flaky references, found and flagged: `rcb doctor --repeat N` on a copy of the bundled
 * example whose smoothfocal test also checks an unseeded random draw against a threshold it
 * passes half the time (as GMFlow's reference fails its own test by chance at a 1e-7
 * tolerance). Every smoothfocal snippet is listed flaky, temperedattn's none; `rcb run` then
 * flags their verdicts flaky_reference and every report counts and names them.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { PSET_MINI, rcb, tempDir } from '../helpers/cli';

const root = tempDir('rcb-flaky-');
const pset = join(root, 'pset');
cpSync(PSET_MINI, pset, { recursive: true });
const testFile = join(pset, 'smoothfocal', 'paper2code_test.py');
writeFileSync(
  testFile,
  readFileSync(testFile, 'utf8').replace(
    "\n\nif __name__ == '__main__':",
    [
      '',
      '',
      'class TestUnseededNoise(unittest.TestCase):',
      '    def test_noise_under_tolerance(self):',
      '        self.assertLess(random.SystemRandom().random(), 0.5)',
      '',
      '',
      "if __name__ == '__main__':",
    ].join('\n'),
  ),
);
const env = { RCB_CACHE_DIR: join(root, 'cache') };
const SMOOTHFOCAL = ['closed form gradient', 'focal modulation', 'log softmax', 'skip ignored', 'smoothed targets', 'weighted batch mean'];

describe('rcb doctor --repeat', () => {
  // 20 runs of a coin flip: a snippet reads stable by chance with probability 2^-19.
  let doctor: ReturnType<typeof rcb>;
  beforeAll(() => {
    doctor = rcb(['doctor', '--pset', pset, '--papers', 'smoothfocal,temperedattn', '--repeat', '20', '--json'], { env, timeoutMs: 300_000 });
  }, 320_000);

  it('lists every snippet whose verdict changed, and exits 1', () => {
    expect([doctor.status, doctor.stderr.slice(-600)]).toEqual([1, expect.stringContaining('6 flaky snippet(s) of 13, each oracle run 20 times')]);
    const rows = JSON.parse(doctor.stdout) as Array<{ paper: string; snippet: string; runs: number; strictPasses: number; flaky: boolean; reasons: string[] }>;
    expect(rows).toHaveLength(13);
    expect(
      rows
        .filter((r) => r.flaky)
        .map((r) => `${r.paper}/${r.snippet}`)
        .sort(),
    ).toEqual(SMOOTHFOCAL.map((s) => `smoothfocal/${s}`));
    expect(rows.every((r) => r.runs === 20)).toBe(true);
    expect(rows.filter((r) => r.paper === 'temperedattn').every((r) => r.strictPasses === 20 && !r.flaky)).toBe(true);
    expect(rows.find((r) => r.flaky)!.reasons[0]).toMatch(/^AssertionError: [\d.]+ not less than 0\.5$/);
  });

  it("makes rcb run flag those snippets' verdicts, which every report counts and names, scores unchanged", () => {
    const out = join(root, 'run');
    // --skip-env-check: the paper's own check would, half the time, find smoothfocal env_broken by the same chance.
    const run = rcb(['run', '--pset', pset, '--papers', 'smoothfocal,temperedattn', '--model', 'oracle', '--skip-env-check', '--out', out], { env });
    expect([run.status, run.stderr.slice(-600)]).toEqual([0, expect.stringContaining('flaky_reference: 6 snippet(s)')]);
    const db = new Database(join(out, 'rcb.sqlite'), { readonly: true });
    const rows = db.prepare('SELECT t.paper, v.record FROM verdicts v JOIN tasks t USING (run_id, task_id)').all() as { paper: string; record: string }[];
    db.close();
    const flagged = (paper: string) =>
      rows.filter((r) => r.paper === paper).map((r) => (JSON.parse(r.record) as { flags: string[] }).flags.includes('flaky_reference'));
    expect(flagged('smoothfocal')).toEqual(Array(6).fill(true));
    expect(flagged('temperedattn')).toEqual(Array(7).fill(false));

    const json = JSON.parse(rcb(['report', out, '--format', 'json']).stdout) as {
      models: Array<{ model: string; flaky: number; tasks: number }>;
      notes: string[];
    };
    expect(json.models.map((m) => [m.model, m.flaky, m.tasks])).toEqual([['oracle', 6, 13]]);
    const note = `flaky_reference: 6 scored task sample(s) of 6 snippet(s)`;
    expect(json.notes.some((n) => n.startsWith(note) && n.includes('smoothfocal/loss.py/log softmax'))).toBe(true);
    for (const format of ['table', 'markdown']) expect(rcb(['report', out, '--format', format]).stdout).toContain(note);
    // The HTML report shows each task's verdict with its flags (it prints no score notes).
    expect(rcb(['report', out, '--format', 'html']).stdout).toMatch(/flags (tests_failed, )?flaky_reference; exit/);
    const official = JSON.parse(rcb(['report', out, '--format', 'official', '--judge', 'official']).stdout) as { rcb_notes?: string[] };
    expect(official.rcb_notes?.some((n) => n.startsWith(note))).toBe(true);
    // The CSV's ALL row carries the count in its flaky column (found by name, counted from the
    // end: the quoted interval_method cell before it holds commas; cost columns come last).
    const csv = rcb(['report', out, '--format', 'csv']).stdout.split('\n');
    expect(csv[0]).toContain(',untested,env_broken,flaky,infra_error,infra_error_rate');
    const names = csv[0].split(',');
    const fromEnd = names.length - names.indexOf('flaky');
    expect(
      csv
        .find((l) => l.startsWith('strict,all,oracle,ALL,'))!
        .split(',')
        .at(-fromEnd),
    ).toBe('6');
    expect(readFileSync(join(out, 'leaderboard.txt'), 'utf8')).toContain(note);
  });

  it('refuses fewer than two runs', () => {
    const r = rcb(['doctor', '--pset', pset, '--repeat', '1'], { env });
    expect([r.status, r.stderr]).toEqual([1, 'rcb: --repeat must be at least 2: a verdict can only change between runs\n']);
  });
});
