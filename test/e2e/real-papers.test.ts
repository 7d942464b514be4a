/**
 * The public 20-paper pset (../shared/data/researchcodebench), as a user runs it here: rcb
 * doctor says which papers' tests run on this machine's Python and why the others do not;
 * rcb run then scores the oracle (every runnable snippet passes strict) and the empty model
 * (0 strict), with the papers that cannot run reported as env_broken rather than as failures.
 * The Debian packages these papers need come from scripts/system-packages.sh.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { rcb, tempDir } from '../helpers/cli';
import { describeWithRealPset, REAL_PSET } from '../helpers/shared-data';

/** The papers whose tests run on Debian's Python with the packages of scripts/system-packages.sh. */
const RUNNABLE = ['Diff-Transformer', 'DiffusionDPO', 'GPS', 'LEN', 'minp', 'OptimalSteps', 'SISS', 'TabDiff', 'Tanh-Init'];
const RUNNABLE_SNIPPETS = 69;

interface JsonReport {
  notes: string[];
  models: {
    model: string;
    scaled: { mean: number };
    pass1: { mean: number };
    tasks: number;
    envBroken: number;
    pending: number;
    paperIds: string[];
    failures: Record<string, number>;
  }[];
}

describeWithRealPset('the public pset on this machine', () => {
  const cache = tempDir('rcb-real-cache-');
  const env = { RCB_CACHE_DIR: cache };
  let doctor: { status: number | null; papers: { paper: string; runs: boolean; reason: string | null }[] };

  beforeAll(() => {
    expect(existsSync(join(REAL_PSET, 'papers.yaml'))).toBe(true);
    const r = rcb(['doctor', '--pset', REAL_PSET, '--json'], { env, timeoutMs: 300_000 });
    doctor = { status: r.status, papers: JSON.parse(r.stdout) };
  }, 300_000);

  it('rcb doctor lists the papers that run and names the missing module of those that do not', () => {
    expect(doctor.papers).toHaveLength(20);
    expect(doctor.papers.filter((p) => p.runs).map((p) => p.paper)).toEqual(RUNNABLE);
    expect(doctor.papers.find((p) => p.paper === 'DyT')).toEqual({ paper: 'DyT', runs: false, reason: 'missing module timm', note: null });
    expect(doctor.papers.find((p) => p.paper === 'hyla')).toEqual({ paper: 'hyla', runs: false, reason: 'missing module jax', note: null });
    for (const p of doctor.papers.filter((x) => !x.runs)) expect(p.reason).toMatch(/\S/);
    expect(doctor.status).toBe(1);
  });

  it('rcb run scores the oracle 100% strict on every runnable snippet and the empty model 0%, the rest env_broken', () => {
    // Act: the environment check reads doctor's results from the cache.
    const out = tempDir('rcb-real-run-');
    const r = rcb(['run', '--pset', REAL_PSET, '--model', 'oracle', '--model', 'empty', '--out', out], { env, timeoutMs: 600_000 });

    // Assess
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`${2 * RUNNABLE_SNIPPETS} test(s) run`);
    const strict = JSON.parse(rcb(['report', out, '--format', 'json', '--judge', 'strict']).stdout) as JsonReport;
    const byModel = Object.fromEntries(strict.models.map((m) => [m.model, m]));
    expect(byModel.oracle).toMatchObject({ tasks: RUNNABLE_SNIPPETS, pending: 0, envBroken: 212 - RUNNABLE_SNIPPETS, failures: {} });
    expect(byModel.oracle.paperIds).toEqual([...RUNNABLE].sort());
    expect(byModel.oracle.scaled.mean).toBe(100);
    expect(byModel.oracle.pass1.mean).toBe(100);
    expect(byModel.empty.scaled.mean).toBe(0);
    expect(byModel.empty.failures).toEqual({ no_code: RUNNABLE_SNIPPETS });
    expect(strict.notes.join('\n')).toContain('of 11 paper(s) that cannot run in this environment');
    expect(strict.notes.join('\n')).toContain('DyT (missing module timm)');
  }, 600_000);
});
