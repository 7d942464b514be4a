/**
 * A sweep of 3 models x 2 samples over examples/pset-mini in batch mode, as a user runs it
 * (`rcb sweep run`), against local servers in OpenAI's and Anthropic's batch wire formats:
 * the same scores as the interactive mode; answers bought in one mode are not bought again
 * in the other (same task ids); rcb killed while a batch is pending finishes it on the next
 * run without submitting it again; `--cancel-batches` stops a pending batch.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { answerBook } from '../../fakes/answer-book';
import { SWEEP_MODEL_IDS, sweepModelsYaml } from '../models/support/sweep-models';
import { startFakeAnthropic, startFakeOpenAI, type FakeServer } from '../../fakes/fake-batch-servers';
import { startRcb } from '../reliability/run-cli';
import { PSET_MINI, REPO, tempDir } from '../helpers/cli';

describe('a batch-mode sweep over examples/pset-mini', () => {
  let openai: FakeServer;
  let anthropic: FakeServer;
  let dir: string;
  const pset = loadPset(PSET_MINI);
  const env = (cache: string) => ({ OPENAI_API_KEY: 'test-key', ANTHROPIC_API_KEY: 'test-key', RCB_CACHE_DIR: join(dir, cache) });
  const sweepFile = (name: string, mode: 'interactive' | 'batch', extra = '') => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(
      file,
      `pset: ${PSET_MINI}\nsamples: 2\nbudget_usd: 5\nmodels_file: models.yaml\nbatch: { poll_seconds: 0.05 }\n${extra}models:\n` +
        SWEEP_MODEL_IDS.map((id) => `  - id: ${id}\n    mode: ${mode}\n`).join(''),
    );
    return file;
  };
  const scores = async (file: string, cache: string) => {
    const r = await startRcb(['sweep', 'report', file, '--format', 'json'], { env: env(cache) }).done;
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
    dir = tempDir('rcb-batch-sweep-');
    writeFileSync(join(dir, 'models.yaml'), sweepModelsYaml(openai.url, anthropic.url));
  });
  afterAll(async () => {
    await openai.close();
    await anthropic.close();
  });

  it('gives the same scores as the interactive mode, at the batch price, and nothing is bought twice', async () => {
    // Act: interactive, then batch (its own cache), then batch sharing the interactive run's cache.
    const interactive = await startRcb(['sweep', 'run', sweepFile('interactive', 'interactive'), '--jobs', '2'], { env: env('cache-i') }).done;
    const callsInteractive = openai.backend.interactiveCalls + anthropic.backend.interactiveCalls;
    const batch = await startRcb(['sweep', 'run', sweepFile('batch', 'batch'), '--jobs', '2'], { env: env('cache-b') }).done;
    const batchesAfter = openai.backend.batches.length + anthropic.backend.batches.length;
    const shared = await startRcb(['sweep', 'run', sweepFile('shared', 'batch'), '--jobs', '2'], { env: env('cache-i') }).done;

    // Assess
    expect(interactive.status).toBe(0);
    expect(batch.status).toBe(0);
    const tasks = pset.papers.reduce((a, p) => a + p.snippets.length, 0) * 2 * 3;
    expect(callsInteractive).toBe(tasks);
    expect(openai.backend.interactiveCalls + anthropic.backend.interactiveCalls).toBe(tasks); // the batch run asked nothing interactively
    expect(openai.backend.submittedRequests() + anthropic.backend.submittedRequests()).toBe(tasks);
    expect(batchesAfter).toBe(3); // one batch per model
    expect(batch.stderr).toMatch(/batch batch_\d+ of fake-claude submitted: 56 request\(s\)/);
    const spend = (out: string) => Number(/spend \$(\d+\.\d+)/.exec(out)![1]);
    expect(spend(batch.stdout)).toBeCloseTo(spend(interactive.stdout) / 2, 3);
    const interactiveScores = await scores(join(dir, 'interactive.yaml'), 'cache-i');
    expect(interactiveScores).toHaveLength(3);
    expect(await scores(join(dir, 'batch.yaml'), 'cache-b')).toEqual(interactiveScores);
    // Same task ids: the batch sweep found every answer in the interactive run's cache.
    expect(shared.status).toBe(0);
    expect(openai.backend.batches.length + anthropic.backend.batches.length).toBe(batchesAfter);
    expect(shared.stdout).toMatch(new RegExp(`: 0 model call\\(s\\), ${tasks} answer\\(s\\) reused`));
    expect(await scores(join(dir, 'shared.yaml'), 'cache-i')).toEqual(interactiveScores);
  }, 600_000);

  it('survives a restart of rcb while a batch is pending, and --cancel-batches stops one', async () => {
    // Prepare: the next OpenAI batch is held until released; Anthropic's completes at once.
    const file = join(dir, 'restart.yaml');
    writeFileSync(
      file,
      `pset: ${PSET_MINI}\nsamples: 1\npapers: [adamlite]\nbudget_usd: 5\nmodels_file: models.yaml\nbatch: { poll_seconds: 0.05 }\nmodels:\n  - id: fake-gpt\n    mode: batch\n  - id: fake-claude\n    mode: batch\n`,
    );
    openai.backend.plans = [{ hold: true }, { hold: true }];
    const before = openai.backend.batches.length;
    const e = env('cache-restart');

    // Act: start, and kill rcb once it has polled the held batch.
    const first = startRcb(['sweep', 'run', file, '--jobs', '1'], { env: e });
    await waitFor(() => openai.backend.batches.length > before && openai.backend.batches[before].polls > 0);
    first.child.kill('SIGKILL');
    await first.done;
    openai.backend.release(openai.backend.batches[before].id);
    const second = await startRcb(['sweep', 'run', file, '--jobs', '1'], { env: e }).done;

    // Assess: the pending batch was collected, not submitted again.
    expect(second.status).toBe(0);
    expect(openai.backend.batches.length).toBe(before + 1);
    expect(openai.backend.resubmittedWhilePending).toEqual([]);
    expect(second.stdout).toMatch(/run succeeded/);

    // Act: a new sweep whose OpenAI batch is held, then cancelled.
    const cancelFile = join(dir, 'cancel.yaml');
    writeFileSync(
      cancelFile,
      `pset: ${PSET_MINI}\nsamples: 1\npapers: [grouprms]\nmodels_file: models.yaml\nbatch: { poll_seconds: 0.05 }\nmodels:\n  - id: fake-gpt\n    mode: batch\n`,
    );
    const third = startRcb(['sweep', 'run', cancelFile, '--jobs', '1'], { env: e });
    await waitFor(() => openai.backend.batches.length > before + 1 && openai.backend.batches[before + 1].polls > 0);
    third.child.kill('SIGKILL');
    await third.done;
    const cancelled = await startRcb(['sweep', 'run', cancelFile, '--jobs', '1', '--cancel-batches'], { env: e }).done;

    // Assess
    expect(openai.log).toContain(`POST /v1/batches/${openai.backend.batches[before + 1].id}/cancel`);
    expect(openai.backend.batches[before + 1].endedAs).toBe('cancelled');
    expect(cancelled.stderr).toContain('cancel requested');
    expect(cancelled.stderr).toMatch(/run cancelled/);
    const status = await startRcb(['sweep', 'status', cancelFile], { env: e }).done;
    const n = pset.papers.find((p) => p.meta.id === 'grouprms')!.snippets.length;
    expect(status.stdout).toContain(`fake-gpt (batch): ${Math.ceil(n / 2)}/${n} answered`);
  }, 300_000);
});

async function waitFor(cond: () => boolean, timeoutMs = 60_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}
