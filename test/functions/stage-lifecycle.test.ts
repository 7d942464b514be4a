/**
 * The one lifecycle every stage's handler goes through (adapters/aws/runtime/stage-lifecycle.ts):
 * the logger carries the Lambda context and the invocation's keys (and drops them after),
 * the handler's trace subsegment is opened with cold start and service annotations, annotated
 * with the run, given the error and closed; a failure is logged once; metrics are flushed on
 * success and on error. Read from what Powertools writes (log lines and EMF blobs on stdout)
 * and from a recording tracer; each of the 7 Lambda stages is driven through its own
 * createHandler.
 */
import { spawnSync } from 'node:child_process';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { Context } from 'aws-lambda';
import { createHandler as createAggregate } from '../../app/stages/aggregate';
import { createHandler as createBatchRound } from '../../app/stages/batch-round';
import { createHandler as createCheckProgress } from '../../app/stages/check-progress';
import { createHandler as createDeadLetter } from '../../app/stages/dead-letter';
import { createHandler as createGenerate } from '../../app/stages/generate';
import { createHandler as createMarkFailed } from '../../app/stages/mark-failed';
import { createHandler as createPlanRun } from '../../app/stages/plan-run';
import { lambdaTelemetry, stageHandler, tracedModelClient, type StageTracer } from '../../adapters/aws/runtime/stage-lifecycle';
import type { ModelClient, ModelRequest, ModelResponse } from '../../core/model';
import type { BlobStore } from '../../core/store';
import { cloudFixture, type CloudFixture } from '../cloud/cloud-fixture';
import { planned, sqsEvent } from './handler-fixtures';
import { REPO } from '../helpers/cli';

/** A subsegment as the recording tracer keeps it. */
interface Seg {
  name: string;
  annotations: Record<string, unknown>;
  metadata: Record<string, unknown>;
  errors: Error[];
  closed: boolean;
  children: Seg[];
  addNewSubsegment(name: string): Seg;
  addAnnotation(k: string, v: unknown): void;
  addMetadata(k: string, v: unknown): void;
  addError(e: Error): void;
  close(): void;
}

function seg(name: string): Seg {
  const s: Seg = {
    name,
    annotations: {},
    metadata: {},
    errors: [],
    closed: false,
    children: [],
    addNewSubsegment(child) {
      const c = seg(child);
      s.children.push(c);
      return c;
    },
    addAnnotation: (k, v) => void (s.annotations[k] = v),
    addMetadata: (k, v) => void (s.metadata[k] = v),
    addError: (e) => void s.errors.push(e),
    close: () => void (s.closed = true),
  };
  return s;
}

/** Powertools' Tracer as the lifecycle uses it, recording a tree under a facade segment, as Lambda's. */
class RecordingTracer {
  readonly root = seg('facade');
  current: Seg = this.root;
  private cold = true;
  isTracingEnabled = () => true;
  getSegment = () => this.current;
  setSegment = (s: Seg) => void (this.current = s);
  putAnnotation = (k: string, v: unknown) => this.current.addAnnotation(k, v);
  annotateColdStart = () => {
    this.putAnnotation('ColdStart', this.cold);
    this.cold = false;
  };
  addServiceNameAnnotation = () => this.putAnnotation('Service', 'rcb-test');
  addErrorAsMetadata = (e: Error) => this.current.addError(e);
  /** The handler subsegments, one per invocation. */
  get invocations(): Seg[] {
    return this.root.children;
  }
  asTracer(): StageTracer {
    return this as unknown as StageTracer;
  }
}

/** What Powertools wrote on stdout: log lines and EMF blobs (each a JSON line). */
let out: string[] = [];
let restore: () => void = () => undefined;
beforeEach(() => {
  out = [];
  // Powertools writes info and EMF to stdout, warnings and errors to stderr.
  const keep = (chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  };
  const spies = [jest.spyOn(process.stdout, 'write').mockImplementation(keep), jest.spyOn(process.stderr, 'write').mockImplementation(keep)];
  restore = () => spies.forEach((s) => s.mockRestore());
});
afterEach(() => restore());

const records = () =>
  out
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const logLines = () => records().filter((r) => !('_aws' in r));
/** Metric names of each EMF blob flushed. */
const flushes = () =>
  records()
    .filter((r) => '_aws' in r)
    .map((r) => (r._aws as { CloudWatchMetrics: { Metrics: { Name: string }[] }[] }).CloudWatchMetrics[0].Metrics.map((m) => m.Name));

function telemetry() {
  const tracer = new RecordingTracer();
  return { logger: new Logger({ serviceName: 'rcb-test' }), metrics: new Metrics({ namespace: 'rcb-test', serviceName: 'test' }), tracer };
}

/** As the lanes' dead-letter queue delivers a message, after its fifth receive. */
const DEAD_LETTERED = { queueArn: 'arn:aws:sqs:us-east-1:123456789012:lane-dlq', receiveCount: 5 };

/** What the stages that call models (Generate, BatchRound) read: the fixture's storage, no cache, no keys, recorded telemetry. */
function modelStageDeps(f: CloudFixture, tel: ReturnType<typeof telemetry>) {
  return {
    store: f.store,
    blobs: f.blobs,
    cache: { get: async () => null, put: async () => undefined },
    scratchDir: f.scratchDir,
    keys: { get: async () => undefined },
    ...tel,
    tracer: tel.tracer.asTracer(),
  };
}

const context = (id: string): Context =>
  ({
    functionName: 'fn',
    functionVersion: '$LATEST',
    memoryLimitInMB: '256',
    awsRequestId: id,
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:fn',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => 60_000,
  }) as unknown as Context;

/** The lifecycle's marks on one invocation that failed with `message`: one error line, the error on the closed subsegment. */
function expectFailedOnce(t: RecordingTracer, failure: string, message: RegExp): void {
  const errors = logLines().filter((l) => l.level === 'ERROR' && l.message === failure);
  expect(errors).toHaveLength(1);
  expect(String((errors[0].error as { message: string }).message)).toMatch(message);
  const [handler] = t.invocations.slice(-1);
  expect(handler.closed).toBe(true);
  expect(handler.errors.map((e) => e.message).join()).toMatch(message);
  expect(t.current).toBe(t.root);
}

describe('every stage goes through the one lifecycle', () => {
  it('PlanRun: context and run on its log lines, metrics flushed, the run on its trace; a refusal logged once, keys dropped', async () => {
    const f = await cloudFixture({ papers: ['grouprms'] });
    const tel = telemetry();
    let ready = true;
    const handler = createPlanRun(() => ({
      store: f.store,
      blobs: f.blobs,
      queue: f.queue,
      scratchDir: f.scratchDir,
      costsFor: () => new Map(),
      evaluationReady: ready,
      ...tel,
      tracer: tel.tracer.asTracer(),
    }));

    await handler(f.input, context('req-1'));
    const planned = logLines().find((l) => l.message === 'run planned')!;
    // cold_start is Powertools' own (once per process, whichever utility asks first).
    expect(planned).toMatchObject({ runId: f.input.runId, function_request_id: 'req-1', cold_start: expect.any(Boolean), service: 'rcb-test' });
    expect(flushes()).toEqual([['TasksPlanned', 'TasksEnqueued']]);
    expect(tel.tracer.invocations[0]).toMatchObject({ closed: true, annotations: { ColdStart: true, Service: 'rcb-test', runId: f.input.runId } });

    out = [];
    ready = false;
    await expect(handler(f.input, context('req-2'))).rejects.toThrow(/parked/);
    expectFailedOnce(tel.tracer, 'planning failed', /parked/);
    expect(logLines().find((l) => l.level === 'ERROR')).toMatchObject({ runId: f.input.runId, function_request_id: 'req-2', cold_start: false });
    expect(tel.tracer.invocations[1].annotations.ColdStart).toBe(false);
    // Nothing was counted: nothing flushed (and no empty-flush warning).
    expect(flushes()).toEqual([]);

    // The next invocation's lines carry no key of the one before.
    out = [];
    await expect(handler({ runId: '', spec: {} }, context('req-3'))).rejects.toThrow(/runId/);
    expect(logLines().every((l) => l.runId === undefined)).toBe(true);
    expect(logLines().some((l) => l.level === 'WARN')).toBe(false);
  });

  it('CheckProgress: metrics flushed on success, and on the error past the deadline (its own metric included)', async () => {
    const f = await planned();
    const tel = telemetry();
    let now = new Date();
    const handler = createCheckProgress(() => ({
      store: f.store,
      generationTimeoutSec: 60,
      ...tel,
      tracer: tel.tracer.asTracer(),
      now: () => now,
    }));

    await handler({ runId: f.input.runId, startedAt: now.toISOString() }, context('c1'));
    expect(flushes()[0]).toEqual(expect.arrayContaining(['TasksSettled', 'TasksFailed']));

    out = [];
    now = new Date(now.getTime() + 3_600_000);
    await expect(handler({ runId: f.input.runId, startedAt: new Date(now.getTime() - 3_600_000).toISOString() }, context('c2'))).rejects.toThrow();
    expect(flushes()).toEqual([['RunsPastGenerationDeadline']]);
    expectFailedOnce(tel.tracer, 'progress check failed', /deadline|generation/i);
  });

  it('Aggregate: a refused write logged once with its run, the error on the trace', async () => {
    const f = await planned();
    const tel = telemetry();
    const refusing: BlobStore = {
      ...f.blobs,
      put: async () => Promise.reject(new Error('Access Denied')),
      get: f.blobs.get.bind(f.blobs),
      list: f.blobs.list.bind(f.blobs),
    };
    const handler = createAggregate(() => ({ store: f.store, blobs: refusing, ...tel, tracer: tel.tracer.asTracer() }));

    await expect(handler({ runId: f.input.runId }, context('a1'))).rejects.toThrow();
    const failure = logLines().filter((l) => l.level === 'ERROR');
    expect(failure).toHaveLength(1);
    expect(failure[0]).toMatchObject({ message: 'aggregation failed', runId: f.input.runId, function_request_id: 'a1' });
    expect(tel.tracer.invocations[0]).toMatchObject({ closed: true, annotations: { runId: f.input.runId } });
    expect(tel.tracer.invocations[0].errors).toHaveLength(1);
  });

  it('MarkRunFailed: its record of the failure, then nothing more; a bad input logged once', async () => {
    const f = await planned();
    const tel = telemetry();
    const handler = createMarkFailed(() => ({ store: f.store, logger: tel.logger, tracer: tel.tracer.asTracer() }));

    await handler({ runId: f.input.runId, failure: { Error: 'E', Cause: 'c' } }, context('m1'));
    expect(logLines().map((l) => [l.level, l.message, l.runId])).toEqual([['ERROR', 'run failed', f.input.runId]]);
    expect(tel.tracer.invocations[0]).toMatchObject({ closed: true, errors: [], annotations: { runId: f.input.runId } });

    out = [];
    await expect(handler({ runId: f.input.runId }, context('m2'))).rejects.toThrow(/failure/);
    expectFailedOnce(tel.tracer, 'recording the run failure failed', /failure/);
  });

  it('DeadLetter: the settled dead letter counted and flushed, the trace closed', async () => {
    const f = await planned();
    const tel = telemetry();
    const handler = createDeadLetter(() => ({ store: f.store, ...tel, tracer: tel.tracer.asTracer() }));

    const response = await handler(sqsEvent([JSON.stringify(f.queue.sent[0].message)], DEAD_LETTERED), context('d1'));
    expect(response).toEqual({ batchItemFailures: [] });
    expect(flushes()).toEqual([['Tasks_dead_lettered_settled']]);
    expect(logLines().find((l) => l.message === 'dead-lettered task settled')).toMatchObject({ function_request_id: 'd1' });
    expect(tel.tracer.invocations[0]).toMatchObject({ closed: true, errors: [] });
  });

  it('Generate: each task counted and flushed, every paid call its own subsegment under the handler', async () => {
    const f = await planned();
    const tel = telemetry();
    const message = f.queue.sent.find((m) => m.model === 'oracle')!.message;
    const oracle = f.clients.get('oracle')!;
    // The oracle's answers, as a paid model: its calls are traced (offline ones are not).
    const paid: ModelClient = { id: 'oracle', params: oracle.params, offline: false, complete: (req) => oracle.complete(req) };
    const handler = createGenerate(() => ({
      ...modelStageDeps(f, tel),
      modelsFor: () => ({ clients: new Map([...f.clients, ['oracle', paid]]), costs: new Map() }),
    }));

    const response = await handler(sqsEvent([JSON.stringify(message)]), context('g1'));
    expect(response).toEqual({ batchItemFailures: [] });
    expect(flushes()).toEqual([['Tasks_called']]);
    const [invocation] = tel.tracer.invocations;
    expect(invocation.closed).toBe(true);
    expect(invocation.children.map((c) => [c.name, c.annotations, c.closed])).toEqual([
      ['### model oracle', { provider: 'unregistered', model: 'oracle', paper: 'grouprms' }, true],
    ]);
    expect(invocation.children[0].metadata.usage).toBeDefined();
  });

  it('BatchRound: an input it cannot read logged once, nothing flushed', async () => {
    const f = await planned();
    const tel = telemetry();
    const handler = createBatchRound(() => modelStageDeps(f, tel));

    await expect(handler({ runId: f.input.runId }, context('b1'))).rejects.toThrow();
    const errors = logLines().filter((l) => l.level === 'ERROR');
    expect(errors.map((l) => l.message)).toEqual(['batch round failed']);
    expect(flushes()).toEqual([]);
    expect(tel.tracer.invocations[0]).toMatchObject({ closed: true });
    expect(tel.tracer.invocations[0].errors).toHaveLength(1);
  });
});

describe('stageHandler', () => {
  it('flushes what the stage counted before it failed', async () => {
    const tel = telemetry();
    const handler = stageHandler(
      { failure: 'step failed' },
      () => ({ ...tel, tracer: tel.tracer.asTracer() }),
      async (_e: unknown, deps) => {
        deps.metrics.addMetric('Counted', 'Count', 2);
        throw new Error('after counting');
      },
    );
    await expect(handler({})).rejects.toThrow('after counting');
    expect(flushes()).toEqual([['Counted']]);
    expectFailedOnce(tel.tracer, 'step failed', /after counting/);
  });
});

describe('the X-Ray SDK', () => {
  it('is loaded by a deployed telemetry only, not by importing the stages (as the emulator does in its own process)', () => {
    // Its cls-hooked namespace enables an async hook with destroy tracking as it loads, which
    // taxes every promise of the process: dynalite's and s3rver's too, in the emulator.
    const script = (build: boolean): string =>
      [
        "require('./emulator/emulated-run');",
        build ? "require('./adapters/aws/runtime/stage-lifecycle').lambdaTelemetry('probe');" : '',
        "const loaded = Object.keys(require.cache).some((k) => k.includes('/node_modules/aws-xray-sdk-core/') || k.includes('/node_modules/cls-hooked/'));",
        'console.log(JSON.stringify(loaded));',
      ].join('\n');
    const probe = (build: boolean) =>
      spawnSync(process.execPath, ['-r', require.resolve('tsx/cjs'), '-e', script(build)], { cwd: REPO, encoding: 'utf8', timeout: 600_000 });
    const outcome = (r: ReturnType<typeof probe>) => ({ status: r.status, loaded: r.stdout.trim(), stderr: r.status === 0 ? '' : r.stderr });
    expect(outcome(probe(false))).toEqual({ status: 0, loaded: 'false', stderr: '' });
    expect(outcome(probe(true))).toEqual({ status: 0, loaded: 'true', stderr: '' });
  }, 900_000);
});

describe('tracing off', () => {
  it("Powertools' own Tracer outside a Lambda environment: the stage runs, nothing traced, nothing written but its lines", async () => {
    // No AWS_EXECUTION_ENV here, as in the emulator's function processes and the CLI.
    const deployed = lambdaTelemetry('test');
    expect(deployed.tracer.isTracingEnabled()).toBe(false);
    const client: ModelClient = {
      id: 'm',
      params: {},
      offline: false,
      complete: async () => ({ text: 'x', usage: { inputTokens: 1, outputTokens: 1 } as never, finishReason: 'stop' }),
    };
    expect(tracedModelClient(client, deployed.tracer, 'openai')).toBe(client);
    const handler = stageHandler(
      { failure: 'x failed' },
      () => deployed,
      async (_e: unknown, deps, invocation) => {
        invocation.annotate({ runId: 'r1' });
        deps.logger.info('done');
        return 7;
      },
    );
    expect(await handler({}, context('t1'))).toBe(7);
    expect(logLines().map((l) => l.message)).toEqual(['done']);
    expect(new Tracer().getSegment()).toBeDefined();
    expect(out.join('')).not.toMatch(/X-Ray|segment|context missing/i);
  });

  it('the traced model client keeps the rest of the client and records a failed call', async () => {
    const t = new RecordingTracer();
    t.setSegment(t.root.addNewSubsegment('## handler'));
    const failing = {
      id: 'gpt-x',
      params: { temperature: 0 },
      offline: false,
      extra: 41,
      more() {
        return this.extra + 1;
      },
      complete: async (_req: ModelRequest): Promise<ModelResponse> => Promise.reject(new Error('429 rate limited')),
    };
    const traced = tracedModelClient(failing, t.asTracer(), 'openai');
    expect(traced.more()).toBe(42);
    expect(traced.params).toEqual({ temperature: 0 });
    await expect(traced.complete({ prompt: {} as never, sample: 0, task: { paper: 'p', file: 'f', snippet: 's' } })).rejects.toThrow('429');
    const [call] = t.current.children;
    expect(call).toMatchObject({ name: '### model gpt-x', annotations: { provider: 'openai', model: 'gpt-x', paper: 'p' }, closed: true });
    expect(call.errors.map((e) => e.message)).toEqual(['429 rate limited']);
    expect(t.current.name).toBe('## handler');
  });
});
