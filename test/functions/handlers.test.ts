/**
 * The cloud handlers as thin adapters: each parses its event, calls its use case and maps
 * the result; the error paths of the AWS calls behind them are driven with
 * aws-sdk-client-mock.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { S3BlobStore } from '../../adapters/aws/s3-blob-store';
import { EnqueueError } from '../../adapters/aws/sqs-task-queue';
import { CLAIM_LEASE_MARGIN_MS, createHandler as createGenerate, parseLaneThrottleConfig } from '../../app/stages/generate';
import type { ModelClient } from '../../core/model';
import { createHandler as createPlanRun } from '../../app/stages/plan-run';
import { createHandler as createCheckProgress } from '../../app/stages/check-progress';
import { createHandler as createAggregate } from '../../app/stages/aggregate';
import { createHandler as createMarkFailed } from '../../app/stages/mark-failed';
import { LaneTaskQueue } from '../../adapters/aws/runtime/lane-task-queue';
import { readShardManifest } from '../../core/cloud/plan-cloud-run';
import type { RunStore } from '../../core/store';
import { cloudFixture, type CloudFixture } from '../cloud/cloud-fixture';
import { planned, sqsEvent } from './handler-fixtures';
import { makeCompletion } from '../aws/records';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const logger = () => new Logger({ logLevel: 'SILENT' });
const metrics = () => new Metrics({ namespace: 'rcb-test' });

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);
const sqs = mockClient(SQSClient);
beforeEach(() => {
  ddb.reset();
  s3.reset();
  sqs.reset();
});

const mockedStore = () => new DynamoRunStore(DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' })), { tableName: 'runs' });

describe('generate handler', () => {
  function generateHandler(f: CloudFixture, store: RunStore = f.store, log: Logger = logger()) {
    return createGenerate(() => ({
      store,
      blobs: f.blobs,
      cache: { get: async () => null, put: async () => undefined },
      scratchDir: f.scratchDir,
      keys: { get: async () => undefined },
      logger: log,
      metrics: metrics(),
      modelsFor: () => ({ clients: f.clients, costs: new Map() }),
    }));
  }

  it('answers a batch with each message twice, calling each model once per task and failing nothing', async () => {
    // Prepare
    const f = await planned();
    const bodies = f.queue.sent.flatMap((m) => [JSON.stringify(m.message), JSON.stringify(m.message)]);

    // Act
    const response = await generateHandler(f)(sqsEvent(bodies));

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(f.clients.get('oracle')!.calls + f.clients.get('empty')!.calls).toBe(f.queue.sent.length);
    const tasks = await f.store.listTasks(f.input.runId);
    expect((await f.store.getCompletions(tasks.map((t) => t.taskId))).size).toBe(tasks.length);
  });

  it('reports a malformed message as a batch item failure and processes the rest', async () => {
    const f = await planned();
    const response = await generateHandler(f)(sqsEvent(['not json', JSON.stringify({ runId: f.input.runId }), JSON.stringify(f.queue.sent[0].message)]));
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm0' }, { itemIdentifier: 'm1' }] });
    expect((await f.store.getCompletions([f.queue.sent[0].message.taskId])).size).toBe(1);
  });

  it('reports a copy whose task another instance is generating as a batch item failure, without calling the model', async () => {
    // Prepare: another instance holds the claim of the first task (its call is in flight).
    const f = await planned();
    const [busy, free] = f.queue.sent.map((m) => m.message);
    expect(await f.store.claimGeneration(busy.taskId, 'other-instance', 60_000)).toBe(true);
    const log = logger();
    const info = jest.spyOn(log, 'info');
    const error = jest.spyOn(log, 'error');

    // Act
    const response = await generateHandler(f, f.store, log)(sqsEvent([JSON.stringify(busy), JSON.stringify(free)]));

    // Assess: the busy copy goes back to SQS, the other message is answered, and the
    // failure is told as what it is, not as an error.
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm0' }] });
    expect(f.clients.get('oracle')!.calls + f.clients.get('empty')!.calls).toBe(1);
    const completions = await f.store.getCompletions([busy.taskId, free.taskId]);
    expect([...completions.keys()]).toEqual([free.taskId]);
    expect(info).toHaveBeenCalledWith('task in flight elsewhere; SQS will redeliver this copy', { taskId: busy.taskId });
    expect(error).not.toHaveBeenCalled();
    // The other instance still holds its claim; the answered task's claim was released.
    expect(await f.store.claimGeneration(busy.taskId, 'third', 60_000)).toBe(false);
    expect(await f.store.claimGeneration(free.taskId, 'third', 60_000)).toBe(true);
  });

  it('stops a model call before the invocation runs out, releases its reservation and claim, and hands the message back', async () => {
    // Prepare: a paid model whose call never ends on its own; 1 s left in the invocation.
    // On jest's clock, so that "a fifth before the end" is exact on a machine of any speed.
    const f = await planned();
    const message = f.queue.sent.find((m) => m.model === 'oracle')!.message;
    let called!: (signal: AbortSignal) => void;
    const calling = new Promise<AbortSignal>((resolve) => (called = resolve));
    const hanging: ModelClient = {
      id: 'oracle',
      params: {},
      offline: false,
      complete: (req) => {
        called(req.signal!);
        return new Promise((_, reject) => req.signal?.addEventListener('abort', () => reject(new Error('aborted'))));
      },
    };
    const log = logger();
    const warn = jest.spyOn(log, 'warn');
    const handler = createGenerate(() => ({
      store: f.store,
      blobs: f.blobs,
      cache: { get: async () => null, put: async () => undefined },
      scratchDir: f.scratchDir,
      keys: { get: async () => undefined },
      logger: log,
      metrics: metrics(),
      modelsFor: () => ({ clients: new Map([['oracle', hanging]]), costs: new Map([['oracle', { worstCase: () => 0.5, billed: () => 0 }]]) }),
    }));
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      // Act
      const handled = handler(sqsEvent([JSON.stringify(message)]), { getRemainingTimeInMillis: () => 1000 } as never);
      const signal = await calling;

      // Assess: the call runs until 1 s minus a fifth and is stopped then, well before the 1 s.
      await jest.advanceTimersByTimeAsync(799);
      expect(signal.aborted).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(signal.aborted).toBe(true);
      expect(await handled).toEqual({ batchItemFailures: [{ itemIdentifier: 'm0' }] });
    } finally {
      jest.useRealTimers();
    }
    expect((await f.store.getCompletions([message.taskId])).size).toBe(0);
    expect((await f.store.getRun(f.input.runId))?.reservedUsd).toBe(0);
    expect(await f.store.claimGeneration(message.taskId, 'next-delivery', 60_000)).toBe(true);
    expect(warn).toHaveBeenCalledWith('model call stopped at the invocation deadline; SQS will redeliver it', { taskId: message.taskId });
  });

  it("claims each task for the invocation's remaining time and a margin, and releases it once the completion is stored", async () => {
    const f = await planned();
    const message = f.queue.sent[0].message;
    const claim = jest.spyOn(f.store, 'claimGeneration');
    const release = jest.spyOn(f.store, 'releaseGeneration');
    const context = { getRemainingTimeInMillis: () => 120_000 } as unknown as Context;

    const response = await generateHandler(f)(sqsEvent([JSON.stringify(message)]), context);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(claim).toHaveBeenCalledTimes(1);
    expect(claim.mock.calls[0][0]).toBe(message.taskId);
    expect(claim.mock.calls[0][2]).toBe(120_000 + CLAIM_LEASE_MARGIN_MS);
    expect(release).toHaveBeenCalledWith(message.taskId, claim.mock.calls[0][1]);
    expect((await f.store.getCompletions([message.taskId])).size).toBe(1);
  });

  it('reports the record for redelivery when DynamoDB fails, without calling the model', async () => {
    // Prepare: the run context comes from the blob store; the store's reads fail.
    const f = await planned();
    ddb.on(GetCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ProvisionedThroughputExceededException' }));
    ddb.rejects(Object.assign(new Error('Rate exceeded'), { name: 'ProvisionedThroughputExceededException' }));

    // Act
    const response = await generateHandler(f, mockedStore())(sqsEvent([JSON.stringify(f.queue.sent[0].message)]));

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm0' }] });
    expect(f.clients.get('oracle')!.calls + f.clients.get('empty')!.calls).toBe(0);
  });
});

describe('plan-run handler', () => {
  function planHandler(f: CloudFixture, extra: { evaluationReady?: boolean; queue?: LaneTaskQueue } = {}) {
    return createPlanRun(() => ({
      store: f.store,
      blobs: f.blobs,
      queue: extra.queue ?? f.queue,
      scratchDir: f.scratchDir,
      costsFor: () => new Map(),
      evaluationReady: extra.evaluationReady ?? true,
      logger: logger(),
      metrics: metrics(),
    }));
  }

  it('returns the plan the workflow maps over', async () => {
    const f = await cloudFixture();
    const plan = await planHandler(f)(f.input);
    expect(await readShardManifest(f.blobs, plan.shardManifestKey)).toEqual(
      ['oracle', 'empty'].flatMap((model) => f.pset.papers.map((p) => ({ paper: p.meta.id, model }))),
    );
    expect(plan.taskCount).toBe(56);
  });

  it('rejects a workflow input without a valid spec, naming the field', async () => {
    const f = await cloudFixture();
    await expect(planHandler(f)({ runId: 'r1', spec: {} })).rejects.toThrow(/spec\.psetDigest/);
  });

  it('refuses to plan on a parked stack', async () => {
    const f = await cloudFixture();
    await expect(planHandler(f, { evaluationReady: false })(f.input)).rejects.toThrow(/parked/);
  });

  it('fails with the unsent messages when SQS rejects them', async () => {
    // Prepare: SQS blames every entry on the sender.
    const f = await cloudFixture({ papers: ['grouprms'] });
    sqs.on(SendMessageBatchCommand).callsFake((input: { Entries: { Id: string }[] }) => ({
      Successful: [],
      Failed: input.Entries.map((e) => ({ Id: e.Id, Code: 'InvalidMessageContents', Message: 'bad', SenderFault: true })),
    }));
    const queue = new LaneTaskQueue(
      new SQSClient({ region: 'us-east-1' }),
      { queueUrls: { openai: 'https://sqs/openai' }, defaultLane: 'openai' },
      () => 'offline',
    );

    // Act / Assess
    await expect(planHandler(f, { queue })(f.input)).rejects.toThrow(EnqueueError);
    expect(sqs.commandCalls(SendMessageBatchCommand).length).toBeGreaterThan(0);
  });
});

describe('check-progress handler', () => {
  it('reports progress, then done once every task has a completion', async () => {
    const f = await planned();
    const handler = createCheckProgress(() => ({ store: f.store, generationTimeoutSec: 3600, logger: logger(), metrics: metrics() }));
    expect(await handler({ runId: f.input.runId })).toMatchObject({ done: false, settled: 0 });

    const tasks = await f.store.listTasks(f.input.runId);
    for (const t of tasks) await f.store.putCompletion(makeCompletion(t.taskId));
    expect(await handler({ runId: f.input.runId })).toEqual({ done: true, total: tasks.length, settled: tasks.length, failed: 0, waitSec: 30 });
  });

  it('fails when the store cannot be read', async () => {
    ddb.on(GetCommand).rejects(Object.assign(new Error('unreachable'), { name: 'InternalServerError' }));
    ddb.on(QueryCommand).rejects(Object.assign(new Error('unreachable'), { name: 'InternalServerError' }));
    const handler = createCheckProgress(() => ({ store: mockedStore(), generationTimeoutSec: 3600, logger: logger(), metrics: metrics() }));
    await expect(handler({ runId: 'r1' })).rejects.toThrow(/unreachable/);
  });
});

describe('aggregate handler', () => {
  it('fails when S3 refuses the reports, leaving the run for the catch path', async () => {
    // Prepare: a finished-looking run in SQLite; S3 puts fail.
    const f = await planned();
    s3.on(PutObjectCommand).rejects(Object.assign(new Error('Access Denied'), { name: 'AccessDenied' }));
    const blobs = new S3BlobStore(new S3Client({ region: 'us-east-1' }), { bucket: 'b' });
    const handler = createAggregate(() => ({ store: f.store, blobs, logger: logger(), metrics: metrics() }));

    // Act / Assess
    await expect(handler({ runId: f.input.runId })).rejects.toThrow(/Access Denied/);
  });
});

describe('mark-failed handler', () => {
  it('records the error on the run', async () => {
    const f = await planned();
    await createMarkFailed(() => ({ store: f.store, logger: logger() }))({ runId: f.input.runId, failure: { Error: 'E', Cause: 'c' } });
    expect((await f.store.getRun(f.input.runId))?.error).toBe('E: c');
  });

  it('rejects an input without its failure', async () => {
    const f = await planned();
    await expect(createMarkFailed(() => ({ store: f.store, logger: logger() }))({ runId: 'r1' })).rejects.toThrow(/failure/);
  });
});

describe('RCB_LANES', () => {
  it('is refused naming the variable and the wrong field, not read as no lanes', () => {
    expect(() => parseLaneThrottleConfig('not json')).toThrow(/^rcb config: RCB_LANES is not JSON: not json$/);
    expect(() => parseLaneThrottleConfig('[{"name":"openai","queueArn":"arn:q","maxConcurrency":0}]')).toThrow(
      /^rcb config: RCB_LANES is malformed: 0\.maxConcurrency: /,
    );
    expect(parseLaneThrottleConfig(undefined)).toBeUndefined();
    expect(parseLaneThrottleConfig('[{"name":"openai","queueArn":"arn:q","maxConcurrency":4}]')).toEqual([
      { name: 'openai', queueArn: 'arn:q', maxConcurrency: 4 },
    ]);
  });
});
