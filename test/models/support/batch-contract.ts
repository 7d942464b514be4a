/**
 * What every provider's batch client must do against a local server written for its batch
 * wire format, driven by the batch generation use case with the real SQLite store and
 * ledger: one batch of the tasks, answers settled at the batch price; a batch that expires
 * with half its requests failed, whose open requests (and only those) go in the next
 * batch; a restart of rcb while a batch is pending, which polls it instead of submitting
 * again; a cancel; a budget that caps what is submitted.
 */
import { join } from 'node:path';
import type { RunSpec, TaskRecord } from '../../../core/records';
import { loadPset } from '../../../core/pset/read-pset';
import { loadTemplate, buildPrompt } from '../../../core/prompt/template';
import { findSnippet } from '../../../core/prompt/mask';
import { planTasks } from '../../../core/run/plan';
import { generateBatches, type BatchEvent, type BatchGenerateInput } from '../../../core/run/generate-batch';
import { staticKeySource } from '../../../core/keys';
import { HostedModels } from '../../../adapters/models/hosted-models';
import { parseModelEntry, type ModelEntry } from '../../../adapters/models/registry';
import { PSET_MINI, REPO, tempDir } from '../../helpers/cli';
import { openLocalRun } from '../../helpers/model-fixtures';
import { FAKE_USAGE } from '../../../fakes/fake-batch-backend';
import { answerBook } from '../../../fakes/answer-book';
import type { FakeServer } from '../../../fakes/fake-batch-servers';

export interface BatchFixture {
  name: string;
  start(answer: (prompt: string) => string): Promise<FakeServer>;
  /** The registry entry (raw) pointing at the fake server. */
  entry(url: string): Record<string, unknown>;
  keys?: Record<string, string>;
  /** AWS settings and anything else the client needs. */
  clientOptions?: Record<string, unknown>;
  /** Requests a batch needs at least (Bedrock: 100); smaller sets are padded by samples. */
  samples?: number;
  /** The provider keeps rcb's intent id on a batch (findByIntent), so a crash in the submit window is recovered. */
  findsByIntent?: boolean;
}

const PAPER = 'adamlite';

export function batchContract(f: BatchFixture): void {
  describe(`${f.name} batch client against its batch wire format`, () => {
    const pset = loadPset(PSET_MINI);
    const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
    const answer = answerBook(pset, template, true);
    let server: FakeServer;
    let entry: ModelEntry;

    beforeAll(async () => {
      server = await f.start(answer);
      entry = parseModelEntry(f.entry(server.url));
    });
    afterAll(() => server.close());
    beforeEach(() => {
      server.backend.batches.length = 0;
      server.backend.plans = [];
      server.backend.resubmittedWhilePending.length = 0;
    });

    /** A run store and ledger on one file (a run directory), its run, and the batch deps. */
    async function setup(budgetUsd: number | null = null, file = join(tempDir('rcb-batch-'), 'rcb.sqlite')) {
      const hosted = new HostedModels([entry], staticKeySource(f.keys ?? {}), f.clientOptions as never);
      const resolved = hosted.resolve(entry.id)!;
      const batch = hosted.resolveBatch(entry.id)!;
      const spec: RunSpec = {
        psetDigest: pset.digest,
        psetRoot: '',
        models: [{ id: entry.id, params: resolved.client.params }],
        samples: f.samples ?? 2,
        withPaper: true,
        papers: [PAPER],
        promptTemplateDigest: template.digest,
        timeoutSec: 60,
        budgetUsd,
      };
      const tasks = planTasks(pset, spec).filter((t) => t.paper === PAPER);
      const { store, ledger, close } = await openLocalRun(spec, { file });
      const events: BatchEvent[] = [];
      const deps = {
        store,
        ledger,
        batchClients: new Map([[entry.id, batch.client]]),
        batchCosts: new Map([[entry.id, batch.cost]]),
        sleep: async () => undefined,
        onEvent: ((e: BatchEvent) => void events.push(e)) as (e: BatchEvent) => void,
      };
      const input: BatchGenerateInput = { runId: 'r', pset, template, withPaper: true, tasks, pollMs: 0 };
      return { file, store, ledger, deps, input, tasks, events, batch, close };
    }

    const billedPerAnswer = () => (entry.prices.batch!.input * FAKE_USAGE.input) / 1e6 + (entry.prices.batch!.output * FAKE_USAGE.output) / 1e6;

    test('the tasks go as one batch; answers are stored with their usage and settled at the batch price', async () => {
      const s = await setup();
      try {
        const result = await generateBatches(s.deps, s.input);

        expect(server.backend.batches).toHaveLength(1);
        expect(server.backend.batches[0].requests.map((r) => r.customId).sort()).toEqual(s.tasks.map((t) => t.taskId).sort());
        expect(result).toMatchObject({ answered: s.tasks.length, failed: 0, submitted: 1, open: 0 });
        const answers = await s.store.getCompletions(s.tasks.map((t) => t.taskId));
        for (const t of s.tasks) {
          const paper = pset.papers.find((p) => p.meta.id === t.paper)!;
          const c = answers.get(t.taskId)!;
          expect(c.text).toBe(answer(buildPrompt(template, paper, findSnippet(paper, t.snippet, t.file), true).text));
          expect(c.usage).toMatchObject({ inputTokens: FAKE_USAGE.input, outputTokens: FAKE_USAGE.output });
          expect(server.backend.find(c.batchId!)).toBe(server.backend.batches[0]);
        }
        const run = (await s.store.getRun('r'))!;
        expect(run.spentUsd).toBeCloseTo(s.tasks.length * billedPerAnswer(), 9);
        expect(run.reservedUsd).toBeCloseTo(0, 9);
        expect((await s.ledger.listBatches('r')).map((b) => b.state)).toEqual(['ingested']);
      } finally {
        await s.close();
      }
    });

    test('a batch that expires with half its requests failed: the open ones, and only those, go in the next batch', async () => {
      // Even indexes answered; odd ones expired or failed with a 500, one refused with a 400 (final).
      server.backend.plans = [{ fate: (i) => (i % 2 === 0 ? 'ok' : i === 1 ? 'bad_request' : i % 4 === 1 ? 'expired' : 'server_error') }];
      const s = await setup();
      try {
        const result = await generateBatches(s.deps, s.input);

        const [first, second] = server.backend.batches;
        expect(server.backend.batches).toHaveLength(2);
        expect(first.endedAs).toBe('expired');
        const reopened = first.requests.filter((_, i) => i % 2 === 1 && i !== 1).map((r) => r.customId);
        expect(second.requests.map((r) => r.customId).sort()).toEqual(reopened.sort());
        expect(server.backend.resubmittedWhilePending).toEqual([]);
        expect(result).toMatchObject({ answered: s.tasks.length - 1, failed: 1, open: 0 });
        const refused = (await s.store.getCompletions([first.requests[1].customId])).get(first.requests[1].customId)!;
        expect(refused.error).toMatchObject({ kind: 'bad_request' });
        expect(refused.error!.message).toContain('max_tokens is too large');
        const run = (await s.store.getRun('r'))!;
        expect(run.spentUsd).toBeCloseTo((s.tasks.length - 1) * billedPerAnswer(), 9);
        expect(run.reservedUsd).toBeCloseTo(0, 9);
      } finally {
        await s.close();
      }
    });

    test('a restart of rcb while a batch is pending polls that batch and submits nothing again', async () => {
      server.backend.plans = [{ hold: true }];
      const first = await setup();
      const abort = new AbortController();
      first.deps.onEvent = (e) => {
        if (e.type === 'polled') abort.abort();
      };
      // Act: rcb submits, polls once, and is stopped.
      const stopped = await generateBatches(first.deps, { ...first.input, signal: abort.signal });
      await first.close();
      expect(stopped).toMatchObject({ submitted: 1, open: first.tasks.length });

      // Act: a new rcb on the same run directory, which drops stale reservations as a local run does.
      const again = await setup(null, first.file).catch(() => undefined);
      const s = again!;
      await s.store.clearReservations('r');
      let heldWhilePending = 0;
      s.deps.onEvent = (e) => {
        if (e.type === 'polled' && e.state !== 'completed') {
          void s.store.getRun('r').then((run) => (heldWhilePending = run!.reservedUsd));
          server.backend.release(e.providerBatchId);
        }
      };
      try {
        const result = await generateBatches(s.deps, { ...s.input, reservationsCleared: true });

        // Assess
        expect(server.backend.batches).toHaveLength(1);
        expect(server.backend.resubmittedWhilePending).toEqual([]);
        expect(result).toMatchObject({ submitted: 0, answered: s.tasks.length, open: 0 });
        expect(heldWhilePending).toBeGreaterThan(0);
        const run = (await s.store.getRun('r'))!;
        expect(run.spentUsd).toBeCloseTo(s.tasks.length * billedPerAnswer(), 9);
        expect(run.reservedUsd).toBeCloseTo(0, 9);
      } finally {
        await s.close();
      }
    });

    if (f.findsByIntent)
      test('a crash between the provider accepting a batch and the ledger recording it: the restart finds the batch by its intent id and pays nothing twice', async () => {
        // Prepare: the ledger's write of the accepted batch never happens (rcb killed there).
        const first = await setup();
        const ledger = first.deps.ledger;
        const crashing = {
          putBatch: async (b: import('../../../core/batch').BatchRecord) => {
            if (b.state === 'pending') throw new Error('crash');
            return ledger.putBatch(b);
          },
          listBatches: (runId: string) => ledger.listBatches(runId),
        };
        try {
          await expect(generateBatches({ ...first.deps, ledger: crashing }, first.input)).rejects.toThrow('crash');
          expect((await ledger.listBatches('r')).map((b) => b.state)).toEqual(['submitting']);
          await first.store.clearReservations('r');

          // Act: a new rcb on the same run directory.
          const result = await generateBatches(first.deps, { ...first.input, reservationsCleared: true });

          // Assess
          expect(server.backend.batches).toHaveLength(1);
          expect(result).toMatchObject({ submitted: 0, answered: first.tasks.length, open: 0 });
          const run = (await first.store.getRun('r'))!;
          expect(run.spentUsd).toBeCloseTo(first.tasks.length * billedPerAnswer(), 9);
          expect(run.reservedUsd).toBeCloseTo(0, 9);
        } finally {
          await first.close();
        }
      });

    test('a cancel stops the pending batch; what it answered is stored and billed, the rest stays open', async () => {
      server.backend.plans = [{ hold: true }];
      const first = await setup();
      const abort = new AbortController();
      first.deps.onEvent = (e) => {
        if (e.type === 'submitted') abort.abort();
      };
      await generateBatches(first.deps, { ...first.input, signal: abort.signal });
      try {
        const result = await generateBatches(first.deps, { ...first.input, cancel: true });

        const half = Math.ceil(first.tasks.length / 2);
        expect(server.backend.batches).toHaveLength(1);
        expect(server.backend.batches[0].endedAs).toBe('cancelled');
        expect(result).toMatchObject({ cancelled: true, answered: half, open: first.tasks.length - half, submitted: 0 });
        const run = (await first.store.getRun('r'))!;
        expect(run.spentUsd).toBeCloseTo(half * billedPerAnswer(), 9);
        expect(run.reservedUsd).toBeCloseTo(0, 9);
      } finally {
        await first.close();
      }
    });

    test('one round at a time (a state machine step): submit and return while pending, ingest in a later round', async () => {
      server.backend.plans = [{ hold: true }];
      const s = await setup();
      try {
        const first = await generateBatches(s.deps, { ...s.input, once: true });
        const second = await generateBatches(s.deps, { ...s.input, once: true });
        server.backend.release(server.backend.batches[0].id);
        const third = await generateBatches(s.deps, { ...s.input, once: true });

        expect(first).toMatchObject({ submitted: 1, pendingBatches: 1, open: s.tasks.length });
        expect(second).toMatchObject({ submitted: 0, pendingBatches: 1, polls: 1 });
        expect(third).toMatchObject({ submitted: 0, pendingBatches: 0, open: 0, answered: s.tasks.length });
        expect(server.backend.batches).toHaveLength(1);
        expect((await s.store.getRun('r'))!.reservedUsd).toBeCloseTo(0, 9);
      } finally {
        await s.close();
      }
    });

    test('under a budget, what is submitted is what fits at its worst case, and spend never exceeds it', async () => {
      const probe = await setup();
      const worsts = probe.tasks.map((t) => {
        const paper = pset.papers.find((p) => p.meta.id === t.paper)!;
        return probe.batch.cost.worstCase(buildPrompt(template, paper, findSnippet(paper, t.snippet, t.file), true));
      });
      const perRequestWorst = Math.max(...worsts);
      await probe.close();
      const budget = perRequestWorst * 3;
      const s = await setup(budget);
      const overBudget: number[] = [];
      s.deps.onEvent = (e) => {
        if (e.type === 'submitted' || e.type === 'ingested')
          void s.store.getRun('r').then((r) => r!.spentUsd + r!.reservedUsd > budget + 1e-9 && overBudget.push(r!.spentUsd + r!.reservedUsd));
      };
      try {
        const result = await generateBatches(s.deps, s.input);

        expect(server.backend.batches.length).toBeGreaterThan(1);
        expect(Math.max(...server.backend.batches.map((b) => b.requests.length))).toBeLessThan(s.tasks.length);
        expect(overBudget).toEqual([]);
        const run = (await s.store.getRun('r'))!;
        expect(run.spentUsd).toBeLessThanOrEqual(budget + 1e-9);
        expect(result.answered + result.open).toBe(s.tasks.length);
        expect(run.reservedUsd).toBeCloseTo(0, 9);
      } finally {
        await s.close();
      }
    });
  });
}

export type { TaskRecord };
