/**
 * Slow models (`slow: true`) in OpenAI's Responses background mode, under the batch
 * contract and through the batch generation use case, against a local server that answers
 * background responses slowly (queued, then in progress, then ended): each request one
 * background response; polls until every one ended; a retryable failure and a response the
 * provider cancelled go out again, a final failure is recorded; a restart polls the same
 * responses without creating new ones; a cancel cancels those still running. Spend is at
 * the interactive price (background mode is no discount).
 */
import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { planTasks } from '../../core/run/plan';
import { generateBatches } from '../../core/run/generate-batch';
import { staticKeySource } from '../../core/keys';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { SqliteBatchLedger } from '../../adapters/local/sqlite-batch-ledger';
import { HostedModels } from '../../adapters/models/hosted-models';
import { parseModelEntry, RegistryError } from '../../adapters/models/registry';
import { responseIds } from '../../adapters/models/providers/openai-background';
import { answerBook } from '../../fakes/answer-book';
import { FAKE_USAGE } from '../../fakes/fake-batch-backend';
import { startFakeOpenAIBackground, type FakeBackgroundServer } from '../../fakes/fake-batch-servers';
import { PSET_MINI, REPO } from '../helpers/cli';
import { fakeRunSpec, openLocalRun } from '../helpers/model-fixtures';

const pset = loadPset(PSET_MINI, { papers: ['adamlite'] });
const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
const answer = answerBook(pset, template, true);
let server: FakeBackgroundServer;

const raw = (url: string, over: Record<string, unknown> = {}) => ({
  id: 'slow-reasoner',
  provider: 'openai-responses',
  model: 'gpt-fake-r',
  base_url: `${url}/v1`,
  params: { max_output_tokens: 4000, reasoning_effort: 'high' },
  prices: { input: 2, cached_input: 0.2, output: 8, as_of: '2026-12-01' },
  knowledge_cutoff: '2025-01',
  context_window: 400000,
  slow: true,
  ...over,
});

beforeAll(async () => {
  server = await startFakeOpenAIBackground(answer);
});
afterAll(() => server.close());
beforeEach(() => {
  server.responses.length = 0;
  server.fates = [];
  server.slowness = { queued: 1, inProgress: 1 };
});

async function setup() {
  const entry = parseModelEntry(raw(server.url));
  const hosted = new HostedModels([entry], staticKeySource({ OPENAI_API_KEY: 'test-key' }));
  const background = hosted.resolveBackground(entry.id)!;
  const spec = fakeRunSpec(pset, template, [{ id: entry.id, params: hosted.resolve(entry.id)!.client.params }]);
  const tasks = planTasks(pset, spec);
  const { file, store, ledger, close } = await openLocalRun(spec, { prefix: 'rcb-background-' });
  const deps = {
    store,
    ledger,
    batchClients: new Map([[entry.id, background.client]]),
    batchCosts: new Map([[entry.id, background.cost]]),
    sleep: async () => undefined,
  };
  const input = { runId: 'r', pset, template, withPaper: true, tasks, pollMs: 0 };
  return { entry, store, ledger, deps, input, tasks, file, close };
}

describe('a slow model in background mode', () => {
  it('creates one background response per request, polls them until each ended, retries the failed and cancelled, records the final failure', async () => {
    // Prepare: four fates among ok ones; each response is queued for 2 retrievals, in progress for 3.
    server.fates = ['ok', 'server_error', 'cancelled', 'invalid_prompt'];
    server.slowness = { queued: 2, inProgress: 3 };
    const s = await setup();
    try {
      // Act
      const result = await generateBatches(s.deps, s.input);

      // Assess
      const n = s.tasks.length;
      expect(server.responses).toHaveLength(n + 2); // the server_error and the cancelled one again
      expect(server.responses.every((r) => r.polls > 5)).toBe(true); // queued, in progress, then ended: many polls, no long request
      expect(server.backend.interactiveCalls).toBe(0);
      expect(result).toMatchObject({ answered: n - 1, failed: 1, open: 0, submitted: 2 });
      const answers = await s.store.getCompletions(s.tasks.map((t) => t.taskId));
      const failed = [...answers.values()].filter((c) => c.error);
      expect(failed).toHaveLength(1);
      expect(failed[0].error).toMatchObject({ kind: 'other' });
      expect(failed[0].error!.message).toContain('invalid_prompt');
      for (const c of answers.values())
        if (!c.error) expect(c.text).toBe(answer(server.responses.find((r) => responseIdOf(s, c.batchId!, c.taskId) === r.id)!.prompt));
      const run = (await s.store.getRun('r'))!;
      expect(run.spentUsd).toBeCloseTo(((n - 1) * (FAKE_USAGE.input * 2 + FAKE_USAGE.output * 8)) / 1e6, 9);
      expect(run.reservedUsd).toBeCloseTo(0, 9);
    } finally {
      await s.close();
    }
  });

  it('after a restart polls the responses it started, creating none again', async () => {
    server.slowness = { queued: 3, inProgress: 3 };
    const first = await setup();
    const abort = new AbortController();
    const stopped = await generateBatches({ ...first.deps, onEvent: (e) => e.type === 'polled' && abort.abort() }, { ...first.input, signal: abort.signal });
    await first.close();
    expect(stopped).toMatchObject({ submitted: 1, open: first.tasks.length });
    const created = server.responses.length;

    // Act: a new rcb on the same run directory.
    const store = new SqliteRunStore(first.file);
    const ledger = new SqliteBatchLedger(first.file);
    try {
      const resumed = await generateBatches({ ...first.deps, store, ledger }, { ...first.input, reservationsCleared: true });

      // Assess
      expect(server.responses).toHaveLength(created);
      expect(resumed).toMatchObject({ submitted: 0, answered: first.tasks.length, open: 0 });
    } finally {
      await store.close();
      ledger.close();
    }
  });

  it('cancel cancels the responses still running and keeps those that ended', async () => {
    server.slowness = { queued: 100, inProgress: 0 };
    const s = await setup();
    try {
      await generateBatches(s.deps, { ...s.input, once: true });
      server.responses[0].status = 'completed'; // one ended before the cancel

      const result = await generateBatches(s.deps, { ...s.input, cancel: true });

      expect(server.log.filter((l) => /^POST \/v1\/responses\/resp_\d+\/cancel$/.test(l))).toHaveLength(s.tasks.length - 1);
      expect(server.responses.filter((r) => r.status === 'cancelled')).toHaveLength(s.tasks.length - 1);
      expect(result).toMatchObject({ answered: 1, open: s.tasks.length - 1, cancelled: true });
    } finally {
      await s.close();
    }
  });

  it('is refused in the registry for a provider without a background mode', () => {
    expect(() => parseModelEntry(raw('http://x', { provider: 'anthropic', params: { max_output_tokens: 1000 } }))).toThrow(
      /slow: needs a provider with a background mode/,
    );
    expect(() => parseModelEntry(raw('http://x', { provider: 'anthropic', params: { max_output_tokens: 1000 } }))).toThrow(RegistryError);
  });
});

/** The response id the ledger's batch id gave a task. */
function responseIdOf(_s: unknown, batchId: string, taskId: string): string {
  return responseIds(batchId)[taskId];
}
