/**
 * `rcb export RUN --format inspect --out DIR`, read back by inspect_ai's own log reader
 * (`read_eval_log`) in a virtualenv this test makes: the pinned inspect_ai from the
 * machine's configured package index, with only the packages its log reader imports
 * (test/fixtures/inspect-ai-read-requirements.txt), cached under ~/.cache/rcb-test/ by version. Where the
 * index cannot be reached the test says so in one loud line and checks nothing else.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { originalBody } from '../../core/prompt/mask';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { loadRun } from '../../core/report/loaded-run';
import { PSET_MINI, rcb, tempDir } from '../helpers/cli';

jest.setTimeout(900_000);

/** The inspect_ai release whose log schema (log/_log.py) the exporter was written against. */
const INSPECT_AI_VERSION = '0.3.285';
/**
 * The packages inspect_ai's log reader imports, pinned: installed without resolving
 * dependencies, they take a fraction of the full install's time on a fresh machine.
 */
const READ_REQUIREMENTS = join(__dirname, '..', 'fixtures', 'inspect-ai-read-requirements.txt');
const requirementsDigest = createHash('sha256').update(readFileSync(READ_REQUIREMENTS)).digest('hex').slice(0, 12);
const VENV = join(process.env.RCB_TEST_CACHE ?? join(homedir(), '.cache', 'rcb-test'), `inspect_ai-${INSPECT_AI_VERSION}-read-${requirementsDigest}`);
const PYTHON = join(VENV, 'bin', 'python');
const SAMPLES = 3;

/** What pip says when the index cannot be reached (no network, no proxy, a dead mirror). */
const UNREACHABLE =
  /Could not find a version|No matching distribution|Temporary failure in name resolution|Max retries exceeded|Network is unreachable|Connection refused|timed out|ProxyError/i;

/** pip of the virtualenv, reading the machine's own configuration (pip.conf, PIP_* variables) for its index. */
const pip = (...args: string[]) => spawnSync(PYTHON, ['-m', 'pip', 'install', '--quiet', ...args], { encoding: 'utf8', timeout: 800_000 });

/**
 * The virtualenv's interpreter, made once per inspect_ai version and reader requirements; or
 * why it cannot be made here. The reader's pinned packages first (--no-deps); where they do
 * not import (another Python wanting other packages), the full install of inspect_ai.
 */
function inspectPython(): { python: string } | { skip: string } {
  const probe = () =>
    spawnSync(PYTHON, ['-c', 'import inspect_ai, sys; from inspect_ai.log import list_eval_logs, read_eval_log; sys.stdout.write(inspect_ai.__version__)'], {
      encoding: 'utf8',
    });
  if (existsSync(PYTHON) && probe().stdout === INSPECT_AI_VERSION) return { python: PYTHON };
  expect(readFileSync(READ_REQUIREMENTS, 'utf8')).toMatch(new RegExp(`^inspect_ai==${INSPECT_AI_VERSION.replace(/\./g, '\\.')}$`, 'm'));
  rmSync(VENV, { recursive: true, force: true });
  mkdirSync(VENV, { recursive: true });
  const venv = spawnSync('python3', ['-m', 'venv', VENV], { encoding: 'utf8' });
  if (venv.status !== 0) throw new Error(`python3 -m venv ${VENV} failed: ${venv.stderr}`);
  const unreachable = (r: ReturnType<typeof pip>): { skip: string } | undefined => {
    const said = `${r.stderr}${r.stdout}`;
    return r.status !== 0 && UNREACHABLE.test(said) ? { skip: said.trim().split('\n').slice(-1)[0] } : undefined;
  };
  let installed = pip('--no-deps', '-r', READ_REQUIREMENTS);
  if (installed.status === 0 && probe().stdout !== INSPECT_AI_VERSION) installed = pip(`inspect_ai==${INSPECT_AI_VERSION}`);
  if (installed.status !== 0) {
    rmSync(VENV, { recursive: true, force: true });
    const skip = unreachable(installed);
    if (skip) return skip;
    throw new Error(`pip install (${READ_REQUIREMENTS}, then inspect_ai==${INSPECT_AI_VERSION}) failed:\n${installed.stderr}${installed.stdout}`);
  }
  const probed = probe();
  if (probed.stdout !== INSPECT_AI_VERSION)
    throw new Error(`${PYTHON} does not import inspect_ai ${INSPECT_AI_VERSION}'s log reader after installing it: ${probed.stderr}`);
  return { python: PYTHON };
}

/** inspect_ai's reading of every log in `dir`: per log its spec, samples, sample scores and headline metrics. */
const READER = `
import json, sys
from inspect_ai.log import list_eval_logs, read_eval_log
out = []
for info in list_eval_logs(sys.argv[1]):
    log = read_eval_log(info)
    samples = log.samples or []
    out.append({
        "status": log.status,
        "task": log.eval.task,
        "model": log.eval.model,
        "epochs": log.eval.config.epochs,
        "dataset_samples": log.eval.dataset.samples,
        "samples": [
            {
                "id": s.id,
                "epoch": s.epoch,
                "input": s.input,
                "target": s.target,
                "output": s.output.completion,
                "scores": {k: v.value for k, v in (s.scores or {}).items()},
                "task_id": s.metadata["task_id"],
                "failure_class": s.metadata["failure_class"],
            }
            for s in samples
        ],
        "metrics": {sc.name: {k: m.value for k, m in sc.metrics.items()} for sc in log.results.scores},
        "headline": [log.results.headline.scorer, log.results.headline.metric],
        "total_samples": log.results.total_samples,
    })
json.dump(out, sys.stdout)
`;

interface ReadLog {
  status: string;
  task: string;
  model: string;
  epochs: number;
  dataset_samples: number;
  samples: {
    id: string;
    epoch: number;
    input: string;
    target: string;
    output: string;
    scores: Record<string, number>;
    task_id: string;
    failure_class: string | null;
  }[];
  metrics: Record<string, Record<string, number>>;
  headline: [string, string];
  total_samples: number;
}

describe('rcb export --format inspect', () => {
  let env: { python: string } | { skip: string };
  beforeAll(() => {
    env = inspectPython();
    if ('skip' in env) {
      process.stderr.write(
        `SKIPPED "rcb export --format inspect" round trip: inspect_ai ${INSPECT_AI_VERSION} cannot be installed from this machine's package index (${env.skip})\n`,
      );
    }
  });

  it("writes one log per model that inspect_ai's read_eval_log reads back: every sample, its prompt, answer and scores, the headline metrics", async () => {
    if ('skip' in env) return;
    // Prepare: three models, three samples of every task of the bundled pset (all it has):
    // the oracle, a model that never answers code, and a replay that is right on sample 0 only.
    const dir = tempDir();
    const pset = loadPset(PSET_MINI);
    const replay = join(dir, 'replay.jsonl');
    const lines = pset.papers.flatMap((p) =>
      p.snippets.flatMap((s) =>
        Array.from({ length: SAMPLES }, (_, sample) =>
          JSON.stringify({
            paper: p.meta.id,
            file: s.file,
            snippet: s.name,
            model: 'first-try',
            sample,
            completion: sample === 0 ? `\`\`\`python\n${originalBody(s)}\`\`\`\n` : '```python\nraise NotImplementedError\n```\n',
          }),
        ),
      ),
    );
    writeFileSync(replay, `${lines.join('\n')}\n`);
    const run = join(dir, 'run');
    const ran = rcb(['run', '--model', 'oracle', '--model', 'empty', '--model', `replay:${replay}`, '--samples', String(SAMPLES), '--out', run]);
    expect(ran.status).toBe(0);
    const report = JSON.parse(rcb(['report', run, '--format', 'json']).stdout) as {
      models: { model: string; scaled: { mean: number }; pass1: { mean: number } }[];
    };
    const out = join(dir, 'inspect');

    // Act
    const exported = rcb(['export', run, '--format', 'inspect', '--out', out]);
    const read = spawnSync((env as { python: string }).python, ['-c', READER, out], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });

    // Assess
    expect(exported.status).toBe(0);
    expect(read.stderr).toBe('');
    expect(read.status).toBe(0);
    expect(readdirSync(out).filter((f) => f.endsWith('.json'))).toHaveLength(3);
    const logs = JSON.parse(read.stdout) as ReadLog[];
    expect(logs.map((l) => l.model).sort()).toEqual(['empty', 'first-try', 'oracle']);
    const store = new SqliteRunStore(join(run, 'rcb.sqlite'));
    const runId = (JSON.parse(readFileSync(join(run, 'run.json'), 'utf8')) as { runId: string }).runId;
    try {
      const loaded = await loadRun(store, runId);
      {
        const tasks = pset.papers.reduce((a, p) => a + p.snippets.length, 0);
        let compared = 0;
        for (const log of logs) {
          expect(log).toMatchObject({ status: 'success', task: 'researchcodebench', epochs: SAMPLES, dataset_samples: tasks, total_samples: tasks * SAMPLES });
          expect(log.samples).toHaveLength(tasks * SAMPLES);
          expect(log.headline).toEqual(['strict', 'scaled_pass@1']);
          for (const s of log.samples) {
            const task = loaded.tasks.find((t) => t.taskId === s.task_id)!;
            const verdict = loaded.verdicts.get(task.taskId)!;
            const completion = loaded.completions.get(task.taskId)!;
            expect([s.id, s.epoch]).toEqual([`${task.paper}/${task.file}/${task.snippet}`, task.sample + 1]);
            expect(s.scores).toEqual({ strict: verdict.strictPass ? 1 : 0, official: verdict.officialPass ? 1 : 0 });
            expect(s.output).toBe(completion.text);
            expect(s.failure_class).toBe(verdict.failureClass);
            const snippet = pset.papers.find((p) => p.meta.id === task.paper)!.snippets.find((x) => x.file === task.file && x.name === task.snippet)!;
            expect(s.target).toBe(originalBody(snippet));
            // The exact prompt: it asks for this snippet, after the paper's text.
            expect(s.input).toContain(snippet.name);
            compared++;
          }
          const scores = report.models.find((m) => m.model === log.model)!;
          expect(log.metrics.strict['scaled_pass@1']).toBeCloseTo(scores.scaled.mean, 10);
          expect(log.metrics.strict['pass@1']).toBeCloseTo(scores.pass1.mean, 10);
          expect(log.metrics.strict['scaled_pass@1_ci_low']).toBeLessThanOrEqual(log.metrics.strict['scaled_pass@1']);
          expect(log.metrics.official).toBeDefined();
        }
        expect(compared).toBe(3 * tasks * SAMPLES);
        const byModel = Object.fromEntries(logs.map((l) => [l.model, l.metrics.strict['scaled_pass@1']]));
        expect(byModel.oracle).toBe(100);
        expect(byModel.empty).toBe(0);
        expect(byModel['first-try']).toBeCloseTo(100 / SAMPLES, 6);
        process.stderr.write(
          `inspect round trip: ${logs.length} logs, ${compared} samples read by inspect_ai ${INSPECT_AI_VERSION}, every sample's strict and official score equal to the store's verdict; ` +
            `scaled pass@1 ${logs.map((l) => `${l.model} ${l.metrics.strict['scaled_pass@1'].toFixed(2)}`).join(', ')}\n`,
        );
      }
    } finally {
      await store.close();
    }
  });

  it('refuses a format it does not write, naming the flag', () => {
    const r = rcb(['export', tempDir(), '--format', 'parquet', '--out', tempDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe('rcb: --format must be one of inspect (got "parquet")');
  });
});
