/**
 * A sweep of 3 models x 2 samples over examples/pset-mini in batch mode through the emulated
 * cloud (`rcb sweep run FILE --emulate`), as a user runs it: the synthesized state machine
 * with its batch lane, the BatchRound function from its cdk.out bundle (in a directory of its
 * own, as every deployed function), DynamoDB and S3 on dynalite and s3rver, against local
 * servers in OpenAI's and Anthropic's batch wire formats. It scores as the interactive mode
 * run locally, asks nothing interactively, submits each request again only when its batch
 * expired it, and pays for each task once at the batch price.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { answerBook } from '../../fakes/answer-book';
import { SWEEP_MODEL_IDS, sweepModelsYaml } from '../models/support/sweep-models';
import { readFileSync } from 'node:fs';
import { startFakeAnthropic, startFakeOpenAI, startFakeOpenAIBackground, type FakeBackgroundServer, type FakeServer } from '../../fakes/fake-batch-servers';
import { startRcb } from '../reliability/run-cli';
import { PSET_MINI, REPO, tempDir } from '../helpers/cli';
import { expectCloudBoardLikeLocal } from '../helpers/cost-lines';

const MODELS = SWEEP_MODEL_IDS;

describe('a batch-mode sweep through the emulated cloud', () => {
  let openai: FakeServer;
  let anthropic: FakeServer;
  let dir: string;
  const pset = loadPset(PSET_MINI);
  const env = () => ({ OPENAI_API_KEY: 'test-key', ANTHROPIC_API_KEY: 'test-key', RCB_CACHE_DIR: join(dir, 'cache'), RCB_PYTHON: '/usr/bin/python3' });
  const sweepFile = (name: string, mode: 'interactive' | 'batch') => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(
      file,
      `pset: ${PSET_MINI}\nsamples: 2\nbudget_usd: 5\nmodels_file: models.yaml\nbatch: { poll_seconds: 0.05 }\nmodels:\n${MODELS.map((id) => `  - id: ${id}\n    mode: ${mode}\n`).join('')}`,
    );
    return file;
  };
  const scores = async (file: string) => {
    const r = await startRcb(['sweep', 'report', file, '--format', 'json'], { env: env() }).done;
    expect(r.status).toBe(0);
    return JSON.parse(r.stdout)[0].report.models.map((m: { model: string; scaled: unknown; pass1: unknown; failures: unknown }) => [
      m.model,
      m.scaled,
      m.pass1,
      m.failures,
    ]);
  };

  beforeAll(async () => {
    const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
    const answer = answerBook(pset, template, true);
    openai = await startFakeOpenAI(answer);
    anthropic = await startFakeAnthropic(answer);
    dir = tempDir('rcb-emulate-batch-');
    writeFileSync(join(dir, 'models.yaml'), sweepModelsYaml(openai.url, anthropic.url));
  });
  afterAll(async () => {
    await openai?.close();
    await anthropic?.close();
  });

  it('gives the interactive scores, asks nothing interactively, and pays each task once at the batch price', async () => {
    // Prepare: the interactive sweep, locally.
    const interactive = await startRcb(['sweep', 'run', sweepFile('interactive', 'interactive'), '--jobs', '2'], { env: env() }).done;
    expect(interactive.status).toBe(0);
    const interactiveCalls = openai.backend.interactiveCalls + anthropic.backend.interactiveCalls;
    // The first OpenAI batch expires half its requests: they go into a second batch. The
    // Anthropic batch stays in progress until it has been polled by two rounds (the lane waits between them).
    openai.backend.plans = [{ fate: (i) => (i % 2 ? 'expired' : 'ok') }];
    anthropic.backend.plans = [{ hold: true }];

    // Act: the same sweep in batch mode, through the emulated cloud.
    const running = startRcb(['sweep', 'run', sweepFile('batch', 'batch'), '--emulate', '--jobs', '2'], { env: env() });
    const held = waitFor(() => anthropic.backend.batches[0]?.polls >= 2, 300_000).then(() => anthropic.backend.release(anthropic.backend.batches[0].id));
    const batch = await running.done;
    await held;

    // Assess
    if (process.env.RCB_SHOW_OUTPUT) process.stderr.write(batch.stderr + batch.stdout);
    expect(batch.stderr.match(/^BatchRound$/gm)!.length).toBeGreaterThanOrEqual(2);
    expect(batch.status).toBe(0);
    const tasks = pset.papers.reduce((a, p) => a + p.snippets.length, 0) * 2 * MODELS.length;
    expect(interactiveCalls).toBe(tasks);
    expect(openai.backend.interactiveCalls + anthropic.backend.interactiveCalls).toBe(tasks); // none from the batch lane
    const batches = [...openai.backend.batches, ...anthropic.backend.batches];
    expect(batches).toHaveLength(MODELS.length + 1); // one per model, and the expired half again
    expect(openai.backend.resubmittedWhilePending.concat(anthropic.backend.resubmittedWhilePending)).toEqual([]);
    const answered = batches.flatMap((b) => b.results.filter((r) => r.kind === 'ok').map((r) => r.customId));
    expect(answered).toHaveLength(tasks);
    expect(new Set(answered).size).toBe(tasks); // each task answered (and billed) once
    const spend = (out: string) => Number(/spend \$(\d+\.\d+)/.exec(out)![1]);
    expect(spend(batch.stdout)).toBeCloseTo(spend(interactive.stdout) / 2, 3);
    expect(await scores(join(dir, 'batch.yaml'))).toEqual(await scores(join(dir, 'interactive.yaml')));
  }, 900_000);

  it('refuses, naming the line, what the cloud lane does not do: interactive retries', async () => {
    const file = join(dir, 'refused.yaml');
    writeFileSync(file, `pset: ${PSET_MINI}\nmodels_file: models.yaml\nbatch: { retry_interactively: true }\nmodels:\n  - id: fake-gpt\n    mode: batch\n`);

    const emulated = await startRcb(['sweep', 'run', file, '--emulate'], { env: env() }).done;

    expect(emulated.status).not.toBe(0);
    expect(emulated.stderr).toContain(`${file}:5: fake-gpt: batch.retry_interactively is not available in the emulated cloud`);
  }, 120_000);
});

/**
 * A slow model (`slow: true`): `rcb run` and `rcb cloud run --emulate` both ask it in OpenAI's
 * background mode (one background response per task, polled until it ends, never one long
 * request) through the batch lane, and score the same.
 */
describe('a slow model', () => {
  let server: FakeBackgroundServer;
  let dir: string;
  const pset = loadPset(PSET_MINI, { papers: ['adamlite'] });

  beforeAll(async () => {
    const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
    server = await startFakeOpenAIBackground(answerBook(pset, template, true));
    server.slowness = { queued: 2, inProgress: 2 };
    dir = tempDir('rcb-slow-');
    const entry = {
      id: 'slow-reasoner',
      provider: 'openai-responses',
      model: 'gpt-fake-r',
      base_url: `${server.url}/v1`,
      params: { max_output_tokens: 4000, reasoning_effort: 'high' },
      prices: { input: 2, cached_input: 0.2, output: 8, as_of: '2026-12-01' },
      knowledge_cutoff: '2025-01',
      context_window: 400000,
      slow: true,
    };
    writeFileSync(join(dir, 'models.yaml'), `models:\n  - ${JSON.stringify(entry)}\n`);
  });
  afterAll(() => server?.close());

  it('is asked in background mode locally and through the emulated cloud, with the same scores', async () => {
    const env = { OPENAI_API_KEY: 'test-key', RCB_CACHE_DIR: join(dir, 'cache'), RCB_PYTHON: '/usr/bin/python3' };
    const common = [
      '--model',
      'slow-reasoner',
      '--models-file',
      join(dir, 'models.yaml'),
      '--papers',
      'adamlite',
      '--samples',
      '2',
      '--budget',
      '5',
      '--python',
      '/usr/bin/python3',
      '--jobs',
      '2',
    ];
    const tasks = pset.papers[0].snippets.length * 2;

    // Act: locally, then in the emulated cloud (its own tables: nothing is reused from the first).
    const local = await startRcb(['run', ...common, '--out', join(dir, 'local')], { env }).done;
    const afterLocal = server.responses.length;
    const cloud = await startRcb(['cloud', 'run', '--emulate', '--state-dir', join(dir, 'emulator'), ...common, '--out', join(dir, 'cloud')], {
      env: { ...env, RCB_CACHE_DIR: join(dir, 'cache-cloud') },
    }).done;

    // Assess
    expect(local.status).toBe(0);
    if (process.env.RCB_SHOW_OUTPUT) process.stderr.write(cloud.stderr);
    expect(cloud.stderr).toMatch(/^BatchRound/m);
    expect(cloud.status).toBe(0);
    expect(server.backend.interactiveCalls).toBe(0);
    expect(afterLocal).toBe(tasks);
    expect(server.responses).toHaveLength(2 * tasks);
    expect(server.responses.every((r) => r.status === 'completed' && r.polls >= 5)).toBe(true);
    expect(cloud.stdout.startsWith('\n')).toBe(true);
    expectCloudBoardLikeLocal(cloud.stdout.slice(1), readFileSync(join(dir, 'local', 'leaderboard.txt'), 'utf8'));
  }, 600_000);
});

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}
