/**
 * Long calls for every provider (issue 22 item 4): a `slow: true` entry never waits on one
 * long request. OpenAI Responses entries go in background mode (openai-background.test.ts);
 * Anthropic, Gemini and Bedrock entries go through their batch API, in the batch lane that
 * no Lambda waits on, priced at batch prices. Driven here against the fake servers of each
 * batch wire format with the real store and ledger: every task answered by a batch and no
 * interactive call made. And a call cut by a deadline is charged at its worst case.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { loadPset } from '../../core/pset/read-pset';
import { buildPrompt, loadTemplate } from '../../core/prompt/template';
import { findSnippet } from '../../core/prompt/mask';
import { planTasks } from '../../core/run/plan';
import { generateBatches } from '../../core/run/generate-batch';
import { generateOne } from '../../core/run/generate';
import { staticKeySource } from '../../core/keys';
import type { ModelClient } from '../../core/model';
import { HostedModels } from '../../adapters/models/hosted-models';
import { longCallPath, parseModelEntry, RegistryError } from '../../adapters/models/registry';
import { laneClient, resolveRunBatchModels, runSlowModels } from '../../app/models';
import { answerBook } from '../../fakes/answer-book';
import { FAKE_USAGE } from '../../fakes/fake-batch-backend';
import { startFakeAnthropic, startFakeBedrock, startFakeGemini, type FakeServer } from '../../fakes/fake-batch-servers';
import { PSET_MINI, REPO } from '../helpers/cli';
import { BEDROCK_BATCH, FAKE_KEYS, fakeEntry, fakeRunSpec, openLocalRun, type FakeProvider } from '../helpers/model-fixtures';

const pset = loadPset(PSET_MINI, { papers: ['adamlite'] });
const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
const answer = answerBook(pset, template, true);

/** s3rver checks signatures against its one built-in account. */
const S3RVER = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

describe('which path a slow entry takes', () => {
  it.each([
    ['openai-responses', 'background'],
    ['anthropic', 'batch'],
    ['gemini', 'batch'],
    ['bedrock', 'batch'],
  ] as const)('%s: %s', (provider, path) => {
    expect(longCallPath(parseModelEntry(fakeEntry(provider, 'http://127.0.0.1:1', { slow: true })))).toBe(path);
  });

  it('is refused, naming the field, for an entry that has neither a background mode nor a batch API it can use', () => {
    const noBatchPrices = (p: FakeProvider) => {
      const raw = fakeEntry(p, 'http://127.0.0.1:1', { slow: true });
      const { batch: _batch, ...prices } = raw.prices as Record<string, unknown>;
      return { ...raw, prices };
    };
    expect(() => parseModelEntry(noBatchPrices('anthropic'))).toThrow(
      /slow: needs a provider with a background mode .* or a batch API .*no batch prices \(prices\.batch\)/,
    );
    expect(() => parseModelEntry(noBatchPrices('gemini'))).toThrow(RegistryError);
    expect(() => parseModelEntry(fakeEntry('bedrock', 'http://127.0.0.1:1', { slow: true, batch_s3_uri: undefined }))).toThrow(
      /slow: .*needs batch_s3_uri and batch_role_arn/,
    );
    expect(() =>
      parseModelEntry({ ...fakeEntry('openai', 'http://127.0.0.1:1', { slow: true }), provider: 'openai-compatible', base_url: 'http://127.0.0.1:1/v1' }),
    ).toThrow(/slow: .*openai-compatible: provider openai-compatible has no batch API/);
  });

  it('goes to the batch lane of a cloud run: PlanRun sees it slow, BatchRound gets its batch client at batch prices', () => {
    const entry = parseModelEntry(fakeEntry('anthropic', 'http://127.0.0.1:1', { slow: true }));
    const hosted = new HostedModels([entry], staticKeySource(FAKE_KEYS.anthropic));
    const spec = fakeRunSpec(pset, template, [{ id: entry.id, params: hosted.resolve(entry.id)!.client.params }]);

    expect([...runSlowModels(spec, () => hosted)]).toEqual([entry.id]);
    const lane = resolveRunBatchModels(spec, [], () => hosted, [entry.id]);
    expect([...lane.batchClients.keys()]).toEqual([entry.id]);
    const prompt = { text: 'x'.repeat(4000), sharedPrefixChars: 0 };
    const batchWorst = lane.batchCosts.get(entry.id)!.worstCase(prompt);
    const interactiveWorst = hosted.resolve(entry.id)!.cost.worstCase(prompt);
    expect(batchWorst).toBeCloseTo(interactiveWorst / 2, 12);
    // An entry that is not slow has no long-call lane.
    const fast = new HostedModels([{ ...entry, slow: false }], staticKeySource(FAKE_KEYS.anthropic));
    expect(laneClient(fast, entry.id, 'background', undefined)).toEqual({ problem: 'not slow in the registry: it has no background mode here' });
  });
});

interface Fixture {
  provider: FakeProvider;
  start(): Promise<FakeServer & { s3Endpoint?: string }>;
}

const fixtures: Fixture[] = [
  { provider: 'anthropic', start: () => startFakeAnthropic(answer) },
  { provider: 'gemini', start: () => startFakeGemini(answer) },
  {
    provider: 'bedrock',
    start: async () => {
      const directory = mkdtempSync(join(tmpdir(), 'rcb-s3rver-'));
      const s3rver = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
      const { port } = await s3rver.run();
      const s3Endpoint = `http://127.0.0.1:${port}`;
      const s3 = new S3Client({ region: 'us-east-1', endpoint: s3Endpoint, credentials: S3RVER, forcePathStyle: true });
      await s3.send(new CreateBucketCommand({ Bucket: BEDROCK_BATCH.bucket }));
      const server = await startFakeBedrock(answer, s3);
      return {
        ...server,
        s3Endpoint,
        close: async () => {
          await server.close();
          s3.destroy();
          await s3rver.close();
          rmSync(directory, { recursive: true, force: true });
        },
      };
    },
  },
];

describe.each(fixtures)('a slow $provider model', ({ provider, start }) => {
  let server: FakeServer & { s3Endpoint?: string };
  beforeAll(async () => {
    server = await start();
  });
  afterAll(() => server.close());

  it('is answered through its batch API, no call waiting on a long request, settled at the batch price', async () => {
    // Prepare: the entry marked slow, resolved as the local run and the cloud's BatchRound do.
    const entry = parseModelEntry(fakeEntry(provider, server.url, { slow: true }));
    // Bedrock's own minimum of 100 records a job is lowered so that the mini pset's tasks are one job.
    const aws = server.s3Endpoint ? { aws: { region: 'us-east-1', credentials: S3RVER, s3Endpoint: server.s3Endpoint, batchMinRequests: 1 } } : {};
    const hosted = new HostedModels([entry], staticKeySource(FAKE_KEYS[provider]), aws);
    const slow = laneClient(hosted, entry.id, 'background', undefined);
    if ('problem' in slow) throw new Error(slow.problem);
    const spec = fakeRunSpec(pset, template, [{ id: entry.id, params: hosted.resolve(entry.id)!.client.params }], { samples: 2 });
    const tasks = planTasks(pset, spec);
    const run = await openLocalRun(spec, { prefix: `rcb-long-${provider}-` });
    try {
      // Act
      const result = await generateBatches(
        {
          store: run.store,
          ledger: run.ledger,
          batchClients: new Map([[entry.id, slow.client]]),
          batchCosts: new Map([[entry.id, slow.cost]]),
          sleep: async () => undefined,
        },
        { runId: run.runId, pset, template, withPaper: true, tasks, pollMs: 0 },
      );

      // Assess: one batch holds every task; every answer stored; spend at the batch prices.
      expect(result).toMatchObject({ answered: tasks.length, failed: 0, submitted: 1, open: 0 });
      expect(server.backend.batches).toHaveLength(1);
      expect(server.backend.batches[0].requests.map((r) => r.customId).sort()).toEqual(tasks.map((t) => t.taskId).sort());
      const answers = await run.store.getCompletions(tasks.map((t) => t.taskId));
      expect(answers.size).toBe(tasks.length);
      const batch = entry.prices.batch!;
      const perAnswer = (batch.input * FAKE_USAGE.input + batch.output * FAKE_USAGE.output) / 1e6;
      const after = (await run.store.getRun(run.runId))!;
      expect(after.spentUsd).toBeCloseTo(tasks.length * perAnswer, 9);
      expect(after.reservedUsd).toBeCloseTo(0, 9);
      // No interactive endpoint was asked (Messages, generateContent, Converse).
      expect(server.log.filter((l) => /\/v1\/messages$|:generateContent$|\/converse$/.test(l))).toEqual([]);
    } finally {
      await run.close();
    }
  });
});

describe('a call cut by a deadline', () => {
  it('is charged to the budget at its worst case (max output at the entry price), as the provider may bill it', async () => {
    // Prepare: a paid model whose call never ends on its own, priced by the registry entry.
    const entry = parseModelEntry(fakeEntry('anthropic', 'http://127.0.0.1:1'));
    const cost = new HostedModels([entry], staticKeySource(FAKE_KEYS.anthropic)).resolve(entry.id)!.cost;
    let started!: () => void;
    const calling = new Promise<void>((resolve) => (started = resolve));
    const hanging: ModelClient = {
      id: entry.id,
      params: {},
      offline: false,
      complete: (req) => {
        started();
        return new Promise((_, reject) => req.signal?.addEventListener('abort', () => reject(new Error('aborted'))));
      },
    };
    const spec = fakeRunSpec(pset, template, [{ id: entry.id, params: {} }], { budgetUsd: 100 });
    const [task] = planTasks(pset, spec);
    const paper = pset.papers.find((p) => p.meta.id === task.paper)!;
    const run = await openLocalRun(spec, { prefix: 'rcb-cut-' });
    const deadline = new AbortController();
    try {
      // Act: the deadline falls while the call is in flight.
      const done = generateOne(
        { store: run.store, clients: new Map([[entry.id, hanging]]), costs: new Map([[entry.id, cost]]) },
        { runId: run.runId, paper, template, withPaper: true, task, signal: deadline.signal },
      );
      await calling;
      deadline.abort();
      const result = await done;

      // Assess: nothing stored, nothing held, the worst case spent.
      const worst = cost.worstCase(buildPrompt(template, paper, findSnippet(paper, task.snippet, task.file), true));
      expect(worst).toBeGreaterThanOrEqual((entry.params.max_output_tokens * entry.prices.output) / 1e6);
      expect(result).toEqual({ outcome: 'aborted', assumedUsd: worst });
      const after = (await run.store.getRun(run.runId))!;
      expect(after.spentUsd).toBeCloseTo(worst, 12);
      expect(after.reservedUsd).toBeCloseTo(0, 12);
      expect((await run.store.getCompletions([task.taskId])).size).toBe(0);
    } finally {
      await run.close();
    }
  });
});
