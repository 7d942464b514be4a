/**
 * The one lifecycle of every cloud stage's Lambda handler (app/stages/*.ts): the logger gets
 * the invocation's Lambda context, the tracer opens the handler's subsegment (cold start and
 * service annotated, the error recorded), the stage runs, a failure is logged once, the
 * metrics stored during the invocation are flushed (on success and on error alike), and the
 * invocation's log keys are dropped, so that none leaks into the next invocation of a warm
 * instance.
 *
 * The same lifecycle runs in AWS, in the emulator's function processes and in the tests:
 * there the tracer is absent (the source stages) or disabled (Powertools turns itself off
 * outside a Lambda execution environment, `AWS_EXECUTION_ENV` unset), and every tracing
 * call is a no-op.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { Context } from 'aws-lambda';
import type { ModelClient, ModelRequest, ModelResponse } from '../../../core/model';

/** What the lifecycle uses of Powertools' Tracer (tests pass a recording one). */
export type StageTracer = Pick<
  Tracer,
  'isTracingEnabled' | 'getSegment' | 'setSegment' | 'annotateColdStart' | 'addServiceNameAnnotation' | 'addErrorAsMetadata' | 'putAnnotation'
>;

/** The observability a stage's handler is given with its dependencies. */
export interface StageTelemetry {
  logger: Logger;
  /** @default none: the stage records no metric (MarkRunFailed) */
  metrics?: Metrics;
  /** @default none: no tracing (the emulator's source stages, tests) */
  tracer?: StageTracer;
}

/** The deployed function's logger, metrics and tracer, named after its stage (`generate` -> service `rcb-generate`). */
export interface LambdaTelemetry {
  logger: Logger;
  metrics: Metrics;
  tracer: Tracer;
}

/**
 * A deployed stage's telemetry. The metrics' `service` dimension is the bare stage name: the
 * alarms of infra/monitoring-construct.ts select their metrics by it.
 */
export function lambdaTelemetry(stage: string): LambdaTelemetry {
  // Loaded here, not at the top: the X-Ray SDK under Powertools' Tracer enables an async hook
  // with destroy tracking as it loads (cls-hooked), which makes every promise of the process
  // dearer. A deployed function builds its telemetry and pays it, as it must to trace; the
  // emulator, which runs the stages in its own process (its in-process source stages, with
  // dynalite and s3rver beside them), never builds it and does not.
  const { Tracer } = require('@aws-lambda-powertools/tracer') as typeof import('@aws-lambda-powertools/tracer');
  return {
    logger: new Logger({ serviceName: `rcb-${stage}` }),
    metrics: new Metrics({ namespace: 'rcb', serviceName: stage }),
    // The handler's response is not recorded: a plan or a batch response can pass the 64 KB of a segment document.
    tracer: new Tracer({ serviceName: `rcb-${stage}` }),
  };
}

/** A stage's Lambda handler: the event, and the Lambda context (absent where a test or the emulator calls it without). */
export type StageHandler<E, R> = (event: E, context?: Context) => Promise<R>;

/** What a stage may do with the invocation's log keys and trace annotations. */
export interface Invocation {
  /** Adds keys to every log line of this invocation, and annotates its trace with them (`runId`: a trace is found by run). */
  annotate(keys: Record<string, string>): void;
}

/** The stage's name in its failure's log line, e.g. `aggregation failed`. */
export interface StageNames {
  /** The message a failure of the invocation is logged with (at error, once, with the error). */
  failure: string;
}

type Segment = NonNullable<ReturnType<StageTracer['getSegment']>>;

/** Opens the handler's subsegment, as Powertools' captureLambdaHandler does; undefined when tracing is off. */
function openHandlerSegment(tracer: StageTracer | undefined): { parent: Segment; handler: Segment } | undefined {
  if (!tracer?.isTracingEnabled()) return undefined;
  const parent = tracer.getSegment();
  if (!parent) return undefined;
  const handler = parent.addNewSubsegment(`## ${process.env._HANDLER ?? 'handler'}`);
  tracer.setSegment(handler);
  tracer.annotateColdStart();
  tracer.addServiceNameAnnotation();
  return { parent, handler };
}

function closeHandlerSegment(tracer: StageTracer | undefined, segments: { parent: Segment; handler: Segment } | undefined): void {
  if (!tracer || !segments) return;
  try {
    segments.handler.close();
  } finally {
    tracer.setSegment(segments.parent);
  }
}

/**
 * A stage's Lambda handler: `run` is the stage's own work (parse the event, call the use
 * case, log and count its result); the lifecycle around it is this function's. `getDeps` is
 * called at each invocation (the handlers memoise it: configuration is read on the first).
 */
export function stageHandler<D extends StageTelemetry, E, R>(
  names: StageNames,
  getDeps: () => D,
  run: (event: E, deps: D, invocation: Invocation, context: Context | undefined) => Promise<R>,
): StageHandler<E, R> {
  return async (event, context) => {
    const deps = getDeps();
    const { logger, metrics, tracer } = deps;
    if (context) logger.addContext(context);
    const segments = openHandlerSegment(tracer);
    const invocation: Invocation = {
      annotate(keys) {
        logger.appendKeys(keys);
        if (segments) for (const [k, v] of Object.entries(keys)) tracer?.putAnnotation(k, v);
      },
    };
    try {
      return await run(event, deps, invocation, context);
    } catch (err) {
      logger.error(names.failure, err as Error);
      if (segments) tracer?.addErrorAsMetadata(err as Error);
      throw err;
    } finally {
      // Flushed only when something was counted: Powertools warns about an empty flush.
      if (metrics?.hasStoredMetrics()) metrics.publishStoredMetrics();
      logger.resetKeys();
      closeHandlerSegment(tracer, segments);
    }
  };
}

/** X-Ray's limit on a subsegment's name. */
const SUBSEGMENT_NAME_MAX = 200;

/**
 * The model client with each `complete` call recorded as its own subsegment,
 * `### model <id>`, annotated with the provider and the model (X-Ray finds a run's calls by
 * `annotation.model`), its error (a throttle, a timeout) recorded on it. The provider's HTTP
 * requests are traced inside it by Powertools' fetch and https instrumentation. Everything
 * else of the client (its id, params, batch or background methods) is the client's own.
 * Without tracing, the client itself.
 */
export function tracedModelClient<C extends ModelClient>(client: C, tracer: StageTracer | undefined, provider: string): C {
  if (!tracer?.isTracingEnabled() || client.offline) return client;
  const complete = async (req: ModelRequest): Promise<ModelResponse> => {
    const parent = tracer.getSegment();
    if (!parent) return client.complete(req);
    const sub = parent.addNewSubsegment(`### model ${client.id}`.slice(0, SUBSEGMENT_NAME_MAX));
    tracer.setSegment(sub);
    sub.addAnnotation('provider', provider);
    sub.addAnnotation('model', client.id);
    sub.addAnnotation('paper', req.task.paper);
    try {
      const res = await client.complete(req);
      sub.addMetadata('usage', res.usage as unknown as Record<string, unknown>);
      sub.addMetadata('finishReason', res.finishReason);
      return res;
    } catch (err) {
      sub.addError(err as Error);
      throw err;
    } finally {
      sub.close();
      tracer.setSegment(parent);
    }
  };
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'complete') return complete;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
