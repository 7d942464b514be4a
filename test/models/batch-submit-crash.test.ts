/**
 * The submit window: rcb crashes after the provider accepted a batch and before the ledger
 * recorded its id. Without care the restart would submit the requests again and pay twice.
 * The intent id recorded before the call (and sent as the batch's metadata) lets the
 * restarted rcb find the provider's batch and poll it instead. Injected at the ledger's
 * write of the accepted batch, against a local server in OpenAI's batch wire format; both
 * as the local runner restarts (reservations cleared) and as the cloud lane's next round
 * does (reservations still held on the run item).
 */
import { join } from 'node:path';
import type { BatchLedger, BatchRecord } from '../../core/batch';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { planTasks } from '../../core/run/plan';
import { generateBatches } from '../../core/run/generate-batch';
import { staticKeySource } from '../../core/keys';
import { HostedModels } from '../../adapters/models/hosted-models';
import { parseModelEntry } from '../../adapters/models/registry';
import { answerBook } from '../../fakes/answer-book';
import { FAKE_USAGE } from '../../fakes/fake-batch-backend';
import { startFakeOpenAI, type FakeServer } from '../../fakes/fake-batch-servers';
import { PSET_MINI, REPO } from '../helpers/cli';
import { fakeEntry, fakeRunSpec, openLocalRun } from '../helpers/model-fixtures';

const pset = loadPset(PSET_MINI, { papers: ['adamlite'] });
const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
let server: FakeServer;
beforeAll(async () => {
  server = await startFakeOpenAI(answerBook(pset, template, true));
});
afterAll(() => server.close());
beforeEach(() => {
  server.backend.batches.length = 0;
  server.backend.resubmittedWhilePending.length = 0;
  server.backend.plans = [];
});

/** The process dies when the ledger is told the provider accepted a batch. */
class CrashOnAccepted implements BatchLedger {
  constructor(private readonly inner: BatchLedger) {}
  async putBatch(b: BatchRecord): Promise<void> {
    if (b.state === 'pending') throw new Error('crash: rcb killed between the provider accepting the batch and the ledger recording it');
    return this.inner.putBatch(b);
  }
  listBatches(runId: string): Promise<BatchRecord[]> {
    return this.inner.listBatches(runId);
  }
}

async function setup() {
  const entry = parseModelEntry(fakeEntry('openai', server.url));
  const hosted = new HostedModels([entry], staticKeySource({ OPENAI_API_KEY: 'test-key' }));
  const batch = hosted.resolveBatch(entry.id)!;
  const spec = fakeRunSpec(pset, template, [{ id: entry.id, params: hosted.resolve(entry.id)!.client.params }], { samples: 2, budgetUsd: 5 });
  const { store, ledger, close } = await openLocalRun(spec, { prefix: 'rcb-submit-crash-' });
  await store.setRunBudget('r', 5);
  const tasks = planTasks(pset, spec);
  const deps = {
    store,
    ledger,
    batchClients: new Map([[entry.id, batch.client]]),
    batchCosts: new Map([[entry.id, batch.cost]]),
    sleep: async () => undefined,
  };
  const input = { runId: 'r', pset, template, withPaper: true, tasks, pollMs: 0 };
  const perAnswer = (FAKE_USAGE.input * 1 + FAKE_USAGE.output * 4) / 1e6;
  return { store, ledger, deps, input, tasks, perAnswer, close };
}

describe('a crash inside the submit window', () => {
  it.each([
    ['the local runner (reservations cleared on restart)', true],
    ["the cloud lane's next round (reservations still held)", false],
  ])('is followed, for %s, by a poll of the batch the provider holds: nothing submitted or paid twice', async (_who, cleared) => {
    // Prepare
    const s = await setup();
    try {
      // Act: the first rcb dies right after the provider accepted its batch.
      const crashed = await generateBatches({ ...s.deps, ledger: new CrashOnAccepted(s.ledger) }, s.input).catch((e: Error) => e);
      const left = await s.ledger.listBatches('r');
      if (cleared) await s.store.clearReservations('r');
      const resumed = await generateBatches(s.deps, { ...s.input, reservationsCleared: cleared });

      // Assess
      expect((crashed as Error).message).toMatch(/^crash:/);
      expect(left.map((b) => [b.state, b.providerBatchId])).toEqual([['submitting', null]]);
      expect((server.backend.batches[0] as unknown as { metadata: Record<string, string> }).metadata.rcb_intent).toBe(left[0].intentId);
      expect(server.backend.batches).toHaveLength(1);
      expect(server.backend.resubmittedWhilePending).toEqual([]);
      expect(resumed).toMatchObject({ submitted: 0, answered: s.tasks.length, open: 0 });
      expect((await s.ledger.listBatches('r')).map((b) => [b.state, b.providerBatchId])).toEqual([['ingested', server.backend.batches[0].id]]);
      const run = (await s.store.getRun('r'))!;
      expect(run.spentUsd).toBeCloseTo(s.tasks.length * s.perAnswer, 9);
      expect(run.reservedUsd).toBeCloseTo(0, 9);
    } finally {
      await s.close();
    }
  });

  it('submits once when the provider holds no batch of the intent (rcb died before the call), and releases the old reservation', async () => {
    const s = await setup();
    try {
      // Prepare: a submit recorded, its worst case held, and no batch at the provider.
      await s.store.reserveBudget('r', 1.5);
      await s.ledger.putBatch({
        batchKey: 'fake-gpt#1',
        runId: 'r',
        model: 'fake-gpt',
        providerBatchId: null,
        taskIds: s.tasks.map((t) => t.taskId),
        reservedUsd: 1.5,
        state: 'submitting',
        submittedAt: new Date().toISOString(),
        intentId: 'rcb-r-1-never-sent',
      });

      const resumed = await generateBatches(s.deps, s.input);

      expect(server.backend.batches).toHaveLength(1);
      expect(resumed).toMatchObject({ submitted: 1, answered: s.tasks.length });
      const [old, fresh] = await s.ledger.listBatches('r');
      expect(old).toMatchObject({ state: 'not_submitted', providerState: expect.stringContaining('the provider has no batch of its intent id') });
      expect(fresh.state).toBe('ingested');
      const run = (await s.store.getRun('r'))!;
      expect(run.reservedUsd).toBeCloseTo(0, 9);
      expect(run.spentUsd).toBeCloseTo(s.tasks.length * s.perAnswer, 9);
    } finally {
      await s.close();
    }
  });
});
