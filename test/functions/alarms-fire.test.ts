/**
 * Each alarm on an rcb metric fires from what the function it watches publishes. The alarms
 * are read from the synthesized default stack (metric, namespace, dimensions, statistic,
 * threshold, comparison); each stage runs through its own handler with the telemetry its
 * deployed function builds (lambdaTelemetry, under the Powertools environment the template
 * gives that function), in the situation the alarm is about; the EMF blobs it writes are
 * read as CloudWatch would (a metric is its namespace, name and exact dimension set) and the
 * alarm's statistic over them is compared with its threshold. The same stages in a healthy
 * run publish nothing that breaches. A renamed metric, a changed dimension, a threshold
 * that the situation does not cross: each fails here.
 */
import type { Context } from 'aws-lambda';
import { lambdaTelemetry } from '../../adapters/aws/runtime/stage-lifecycle';
import { createHandler as createCheckProgress } from '../../app/stages/check-progress';
import { createHandler as createDeadLetter } from '../../app/stages/dead-letter';
import { createHandler as createGenerate } from '../../app/stages/generate';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import type { ModelClient } from '../../core/model';
import type { RunStore } from '../../core/store';
import { cloudFixture, type CloudFixture } from '../cloud/cloud-fixture';
import { sharedStack } from '../infra/helpers';
import { sqsEvent } from './handler-fixtures';

type Resource = { Type: string; Properties?: Record<string, any> };

/** An alarm of the template on one metric (no math). */
interface MetricAlarm {
  logicalId: string;
  name: string;
  namespace: string;
  metricName: string;
  dimensions: Record<string, string>;
  statistic: string;
  threshold: number;
  operator: string;
}

const resources = (): Record<string, Resource> => sharedStack().template.toJSON().Resources as Record<string, Resource>;

/** The template's alarms on rcb's own metrics (namespace `rcb`). */
function rcbAlarms(): MetricAlarm[] {
  return Object.entries(resources())
    .filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties?.Namespace === 'rcb')
    .map(([logicalId, r]) => {
      const p = r.Properties as Record<string, any>;
      return {
        logicalId,
        name: JSON.stringify(p.AlarmName),
        namespace: p.Namespace,
        metricName: p.MetricName,
        dimensions: Object.fromEntries((p.Dimensions ?? []).map((d: { Name: string; Value: string }) => [d.Name, d.Value])),
        statistic: p.Statistic,
        threshold: p.Threshold,
        operator: p.ComparisonOperator,
      };
    });
}

/** The Powertools environment the template gives the function of `service` (its POWERTOOLS_SERVICE_NAME is `rcb-<service>`). */
function deployedEnvironment(service: string): Record<string, string> {
  const fn = Object.values(resources()).find(
    (r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === `rcb-${service}`,
  );
  if (!fn) throw new Error(`no function of the template is rcb-${service}`);
  const vars = fn.Properties?.Environment?.Variables as Record<string, unknown>;
  return Object.fromEntries(Object.entries(vars).filter(([k, v]) => k.startsWith('POWERTOOLS_') && typeof v === 'string')) as Record<string, string>;
}

/** The deployed function's telemetry, built under its template environment. */
function deployedTelemetry(service: string) {
  const env = deployedEnvironment(service);
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return lambdaTelemetry(service);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** One EMF blob as CloudWatch reads it. */
interface EmfBlob {
  namespace: string;
  dimensionSets: string[][];
  metrics: string[];
  values: Record<string, unknown>;
}

let out: string[] = [];
let restore: () => void = () => undefined;
beforeEach(() => {
  out = [];
  const keep = (chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  };
  const spies = [jest.spyOn(process.stdout, 'write').mockImplementation(keep), jest.spyOn(process.stderr, 'write').mockImplementation(keep)];
  restore = () => spies.forEach((s) => s.mockRestore());
});
afterEach(() => restore());

function emfBlobs(): EmfBlob[] {
  return out
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('"_aws"'))
    .map((l) => JSON.parse(l) as Record<string, any>)
    .flatMap((blob) =>
      (blob._aws.CloudWatchMetrics as Array<{ Namespace: string; Dimensions: string[][]; Metrics: Array<{ Name: string }> }>).map((d) => ({
        namespace: d.Namespace,
        dimensionSets: d.Dimensions,
        metrics: d.Metrics.map((m) => m.Name),
        values: blob,
      })),
    );
}

/** The datapoints of the alarm's metric: same namespace and name, and one dimension set equal to the alarm's (names and values). */
function datapoints(alarm: MetricAlarm): number[] {
  const wanted = Object.keys(alarm.dimensions).sort();
  return emfBlobs()
    .filter(
      (b) =>
        b.namespace === alarm.namespace &&
        b.metrics.includes(alarm.metricName) &&
        b.dimensionSets.some((set) => JSON.stringify([...set].sort()) === JSON.stringify(wanted)) &&
        wanted.every((k) => b.values[k] === alarm.dimensions[k]),
    )
    .flatMap((b) => {
      const v = b.values[alarm.metricName];
      return (Array.isArray(v) ? v : [v]) as number[];
    });
}

const STATISTICS: Record<string, (xs: number[]) => number> = {
  Sum: (xs) => xs.reduce((s, x) => s + x, 0),
  Maximum: (xs) => Math.max(...xs),
  Minimum: (xs) => Math.min(...xs),
  Average: (xs) => xs.reduce((s, x) => s + x, 0) / xs.length,
  SampleCount: (xs) => xs.length,
};
const OPERATORS: Record<string, (v: number, t: number) => boolean> = {
  GreaterThanThreshold: (v, t) => v > t,
  GreaterThanOrEqualToThreshold: (v, t) => v >= t,
  LessThanThreshold: (v, t) => v < t,
  LessThanOrEqualToThreshold: (v, t) => v <= t,
};

/** ALARM when the alarm's statistic over its datapoints of one period breaches; no datapoint is not breaching (treatMissingData). */
function evaluate(alarm: MetricAlarm): { state: 'ALARM' | 'OK'; value?: number } {
  const points = datapoints(alarm);
  if (!points.length) return { state: 'OK' };
  const statistic = STATISTICS[alarm.statistic];
  const operator = OPERATORS[alarm.operator];
  if (!statistic || !operator) throw new Error(`alarm ${alarm.name}: statistic ${alarm.statistic} or operator ${alarm.operator} not evaluated here`);
  const value = statistic(points);
  return { state: operator(value, alarm.threshold) ? 'ALARM' : 'OK', value };
}

const context = (remainingMs = 60_000): Context => ({ awsRequestId: 'req', getRemainingTimeInMillis: () => remainingMs }) as unknown as Context;

/** A run of every pset-mini paper (oracle and empty, 1 sample), planned, with a budget. */
async function plannedRun(budgetUsd: number | null = 1): Promise<CloudFixture> {
  const f = await cloudFixture({ budgetUsd });
  await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
  return f;
}

/** The store with the run's spend replaced (what reservations and settled answers would have written). */
function spending(store: RunStore, spentUsd: number): RunStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'getRun') return async (id: string) => ({ ...(await target.getRun(id))!, spentUsd });
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Answers the first `n` generation messages of the run through the generator, offline. */
async function answer(f: CloudFixture, n: number): Promise<void> {
  const generate = createGenerate(() => ({
    store: f.store,
    blobs: f.blobs,
    cache: { get: async () => null, put: async () => undefined },
    scratchDir: f.scratchDir,
    keys: { get: async () => undefined },
    ...deployedTelemetry('generate'),
    modelsFor: () => ({ clients: new Map<string, ModelClient>(f.clients), costs: new Map() }),
  }));
  await generate(sqsEvent(f.queue.sent.slice(0, n).map((m) => JSON.stringify(m.message))), context());
}

/** CheckProgress as deployed, on `store`, at `now`. */
async function checkProgress(f: CloudFixture, store: RunStore = f.store, now = new Date()): Promise<void> {
  const handler = createCheckProgress(() => ({ store, generationTimeoutSec: 3600, ...deployedTelemetry('check-progress'), now: () => now }));
  await handler({ runId: f.input.runId, startedAt: new Date().toISOString() }, context()).catch(() => undefined);
}

/** Each rcb alarm by its metric, with the situation it is about and a healthy one. */
const SITUATIONS: Record<string, { fires: () => Promise<void>; quiet: () => Promise<void> }> = {
  BudgetSpentPercent: {
    // 0.9 of a 1 USD budget spent: past the 80% the alarm watches.
    fires: async () => {
      const f = await plannedRun(1);
      await checkProgress(f, spending(f.store, 0.9));
    },
    quiet: async () => {
      const f = await plannedRun(1);
      await checkProgress(f, spending(f.store, 0.1));
    },
  },
  BudgetProjectedPercent: {
    // Half the tasks answered for 0.6 USD of a 1 USD budget: on course for 1.2 USD.
    fires: async () => {
      const f = await plannedRun(1);
      await answer(f, f.queue.sent.length / 2);
      await checkProgress(f, spending(f.store, 0.6));
    },
    quiet: async () => {
      const f = await plannedRun(1);
      await answer(f, f.queue.sent.length / 2);
      await checkProgress(f, spending(f.store, 0.3));
    },
  },
  TasksFailed: {
    // A dead letter settled as a failed task: the store holds one failed completion.
    fires: async () => {
      const f = await plannedRun();
      await deadLetter(f);
      out = [];
      await checkProgress(f);
    },
    quiet: async () => {
      const f = await plannedRun();
      await answer(f, 4);
      await checkProgress(f);
    },
  },
  Tasks_dead_lettered_settled: {
    fires: async () => deadLetter(await plannedRun()),
    // The same dead letter delivered again: already settled, no second count.
    quiet: async () => {
      const f = await plannedRun();
      await deadLetter(f);
      out = [];
      await deadLetter(f);
    },
  },
  Tasks_stopped_at_deadline: {
    // A paid call still going when the invocation has 50 ms left: stopped a fifth before the end.
    fires: async () => {
      const f = await plannedRun(null);
      const hanging: ModelClient = {
        id: 'oracle',
        params: {},
        offline: false,
        complete: (req) => new Promise((_, reject) => req.signal?.addEventListener('abort', () => reject(new Error('aborted')))),
      };
      const generate = createGenerate(() => ({
        store: f.store,
        blobs: f.blobs,
        cache: { get: async () => null, put: async () => undefined },
        scratchDir: f.scratchDir,
        keys: { get: async () => undefined },
        ...deployedTelemetry('generate'),
        modelsFor: () => ({ clients: new Map([['oracle', hanging]]), costs: new Map([['oracle', { worstCase: () => 0, billed: () => 0 }]]) }),
      }));
      const message = f.queue.sent.find((m) => m.model === 'oracle')!.message;
      await generate(sqsEvent([JSON.stringify(message)]), context(50));
    },
    quiet: async () => answer(await plannedRun(null), 2),
  },
  RunsPastGenerationDeadline: {
    fires: async () => {
      const f = await plannedRun();
      await checkProgress(f, f.store, new Date(Date.now() + 2 * 3600_000));
    },
    quiet: async () => checkProgress(await plannedRun()),
  },
};

async function deadLetter(f: CloudFixture): Promise<void> {
  const handler = createDeadLetter(() => ({ store: f.store, ...deployedTelemetry('dead-letter') }));
  await handler(sqsEvent([JSON.stringify(f.queue.sent[0].message)], { receiveCount: 5 }), context());
}

describe('each alarm on an rcb metric fires from what its function publishes', () => {
  it('covers every such alarm of the template', () => {
    expect(
      rcbAlarms()
        .map((a) => a.metricName)
        .sort(),
    ).toEqual(Object.keys(SITUATIONS).sort());
  });

  const byMetric = () => new Map(rcbAlarms().map((a) => [a.metricName, a]));

  it.each(Object.keys(SITUATIONS))('%s: ALARM in its situation, OK in a healthy run', async (metricName) => {
    const alarm = byMetric().get(metricName)!;
    expect(alarm).toBeDefined();
    await SITUATIONS[metricName].fires();
    const fired = evaluate(alarm);
    expect([alarm.name, fired.state]).toEqual([alarm.name, 'ALARM']);
    out = [];
    await SITUATIONS[metricName].quiet();
    expect([alarm.name, evaluate(alarm).state]).toEqual([alarm.name, 'OK']);
  });
});

/**
 * EventBridge's pattern matching, for what the task-failure rule uses: a list of values (any
 * equal; an array in the event matches through any element), `anything-but`, nested objects
 * (an array of objects in the event matches through any element), `$or`. A field the event
 * lacks matches nothing.
 */
function matchesPattern(pattern: Record<string, unknown>, event: unknown): boolean {
  return Object.entries(pattern).every(([key, p]) => {
    if (key === '$or') return (p as Array<Record<string, unknown>>).some((sub) => matchesPattern(sub, event));
    const value = (event as Record<string, unknown> | undefined)?.[key];
    if (value === undefined) return false;
    const values = Array.isArray(value) ? value : [value];
    if (!Array.isArray(p)) return values.some((v) => typeof v === 'object' && v !== null && matchesPattern(p as Record<string, unknown>, v));
    return values.some((v) =>
      p.some((want) =>
        typeof want === 'object' && want !== null && 'anything-but' in want
          ? !([] as unknown[]).concat((want as { 'anything-but': unknown })['anything-but']).includes(v)
          : want === v,
      ),
    );
  });
}

describe('the shard task failure alarm fires from the ECS task-state events of its cluster', () => {
  const CLUSTER = 'arn:aws:ecs:us-east-1:123456789012:cluster/Rcb-EvaluationCluster';

  /** The rule's pattern, with the cluster's ARN where the template has its GetAtt. */
  function rule(): { logicalId: string; pattern: Record<string, unknown> } {
    const [logicalId, r] = Object.entries(resources()).find(([, x]) => x.Type === 'AWS::Events::Rule')!;
    const cluster = Object.entries(resources()).find(([, x]) => x.Type === 'AWS::ECS::Cluster')![0];
    const text = JSON.stringify(r.Properties?.EventPattern).replace(JSON.stringify({ 'Fn::GetAtt': [cluster, 'Arn'] }), JSON.stringify(CLUSTER));
    return { logicalId, pattern: JSON.parse(text) };
  }

  /** An ECS Task State Change event, as EventBridge delivers it (fields the rule reads). */
  const event = (detail: Record<string, unknown>) => ({
    source: 'aws.ecs',
    'detail-type': 'ECS Task State Change',
    detail: { clusterArn: CLUSTER, taskArn: `${CLUSTER.replace(':cluster/', ':task/')}/abc`, lastStatus: 'STOPPED', ...detail },
  });

  it('matches a task that failed to start or exited non-zero (a timeout stop included), and nothing else', () => {
    const { pattern } = rule();
    const cases: Array<[string, unknown, boolean]> = [
      ['evaluator exited 1', event({ stopCode: 'EssentialContainerExited', containers: [{ name: 'evaluator', exitCode: 1 }] }), true],
      ['failed to start (image pull)', event({ stopCode: 'TaskFailedToStart', containers: [{ name: 'evaluator' }] }), true],
      ['stopped at the state timeout (SIGKILL)', event({ stopCode: 'UserInitiated', containers: [{ name: 'evaluator', exitCode: 137 }] }), true],
      ['evaluator exited 0', event({ stopCode: 'EssentialContainerExited', containers: [{ name: 'evaluator', exitCode: 0 }] }), false],
      ['still running', event({ lastStatus: 'RUNNING', containers: [{ name: 'evaluator' }] }), false],
      [
        "another cluster's task",
        {
          ...event({ containers: [{ exitCode: 1 }] }),
          detail: { clusterArn: 'arn:aws:ecs:us-east-1:123456789012:cluster/other', lastStatus: 'STOPPED', containers: [{ exitCode: 1 }] },
        },
        false,
      ],
      ['another source', { ...event({ containers: [{ exitCode: 1 }] }), source: 'aws.batch' }, false],
    ];
    expect(cases.map(([what, e]) => [what, matchesPattern(pattern, e)])).toEqual(cases.map(([what, , want]) => [what, want]));
  });

  it("alarms on the rule's TriggeredRules: one matched event breaches", () => {
    const { logicalId } = rule();
    const alarms = Object.values(resources()).filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties?.MetricName === 'TriggeredRules');
    expect(alarms).toHaveLength(1);
    const p = alarms[0].Properties as Record<string, any>;
    expect([p.Namespace, p.Dimensions, p.Statistic]).toEqual(['AWS/Events', [{ Name: 'RuleName', Value: { Ref: logicalId } }], 'Sum']);
    // EventBridge counts 1 per matched event in the period.
    expect(OPERATORS[p.ComparisonOperator](1, p.Threshold)).toBe(true);
    expect(OPERATORS[p.ComparisonOperator](0, p.Threshold)).toBe(false);
  });
});
