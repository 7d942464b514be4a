/**
 * The run-ended event (core/cloud/run-events.ts): Aggregate sends one with the figures of the
 * report.json it stored and the run's final status, MarkRunFailed one with the failure; a bus
 * that refuses it leaves the run's status as it was; and the EventBridge adapter's PutEvents,
 * answered by the emulator's local API, carries the detail as JSON under `source: rcb`.
 */
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { generateTask } from '../../core/cloud/generate-task';
import { aggregateRun } from '../../core/cloud/aggregate-run';
import { markRunFailed } from '../../core/cloud/mark-run-failed';
import { RunContextCache } from '../../core/cloud/run-context';
import { cloudKeys } from '../../core/cloud/payloads';
import { RUN_ENDED_EVENT, type EventPublisher, type RunEndedDetail } from '../../core/cloud/run-events';
import { EventBridgePublisher } from '../../adapters/aws/eventbridge-publisher';
import { createEventBridgeClient } from '../../adapters/aws/clients';
import { startLocalAwsApi, type PutEventsEntry } from '../../emulator/local-aws-api';
import { LOCAL_CREDENTIALS } from '../../emulator/local-aws';
import { cloudFixture, type CloudFixture } from './cloud-fixture';

/** A publisher that keeps what it is sent. */
function recording(): EventPublisher & { sent: RunEndedDetail[] } {
  const sent: RunEndedDetail[] = [];
  return { sent, publishRunEnded: async (d) => void sent.push(d) };
}

/** Planned and answered, then stopped by its budget: Aggregate ends it without a test run. */
async function budgetStoppedRun(): Promise<CloudFixture> {
  const f = await cloudFixture({ papers: ['grouprms'], budgetUsd: 5 });
  await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
  const contexts = new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir });
  for (const { message } of f.queue.sent) await generateTask({ store: f.store, clients: f.clients }, await contexts.get(message.runId), message);
  await f.store.setRunStatus(f.input.runId, 'budget_exhausted');
  return f;
}

describe('the run-ended event', () => {
  it("carries the run's final status and the figures of the report.json Aggregate stored", async () => {
    // Prepare
    const f = await budgetStoppedRun();
    const events = recording();

    // Act
    const summary = await aggregateRun({ store: f.store, blobs: f.blobs, events }, f.input.runId);

    // Assess
    const reportKey = `${cloudKeys.reportPrefix(f.input.runId)}report.json`;
    const report = JSON.parse((await f.blobs.get(reportKey))!.toString('utf8'));
    expect(summary.eventError).toBeUndefined();
    expect(events.sent).toEqual([
      {
        runId: f.input.runId,
        status: 'budget_exhausted',
        judge: 'strict',
        models: report.models.map((m: any) => ({
          model: m.model,
          scaledPass1: m.scaled.mean,
          scaledPass1Ci: m.scaled.ci,
          pass1: m.pass1.mean,
          pass1Ci: m.pass1.ci,
          tasks: m.tasks,
        })),
        spentUsd: report.run.spentUsd,
        budgetUsd: 5,
        reportKey,
        ...(report.partial ? { partial: report.partial } : {}),
        summary: expect.any(String),
      },
    ]);
    expect(events.sent[0].models.map((m) => m.model).sort()).toEqual(['empty', 'oracle']);
    const scores = report.models
      .map((m: any) => `${m.model} ${m.scaled.mean.toFixed(2)}${m.scaled.ci ? ` [${m.scaled.ci.low.toFixed(2)}, ${m.scaled.ci.high.toFixed(2)}]` : ''}`)
      .join(', ');
    // A budget-stopped run is partial: its scores are over its judged tasks, and the line says so.
    const { judged, pending } = report.partial;
    expect(events.sent[0].summary).toBe(
      `rcb run ${f.input.runId} budget_exhausted: scaled pass@1 % (strict, partial: over the ${judged} judged of ${judged + pending}, not final) ${scores}; spend $0.0000 of $5.00; report ${reportKey}`,
    );
  });

  it('is not sent by a bus that refuses it, and the run keeps the status Aggregate gave it', async () => {
    const f = await budgetStoppedRun();
    const refusing: EventPublisher = {
      publishRunEnded: async () => {
        throw new Error('AccessDeniedException: not authorized to perform events:PutEvents');
      },
    };

    const summary = await aggregateRun({ store: f.store, blobs: f.blobs, events: refusing }, f.input.runId);

    expect(summary.status).toBe('budget_exhausted');
    expect(summary.eventError).toBe(
      `the run-ended event of run ${f.input.runId} was not sent: AccessDeniedException: not authorized to perform events:PutEvents`,
    );
    expect((await f.store.getRun(f.input.runId))?.status).toBe('budget_exhausted');
  });

  it('of a failed run names the failure and the spend, with no scores and no report', async () => {
    const f = await cloudFixture({ budgetUsd: 2 });
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const events = recording();

    await markRunFailed(f.store, { runId: f.input.runId, failure: { Error: 'States.TaskFailed', Cause: 'shard adamlite exited 1' } }, events);

    expect(events.sent).toEqual([
      {
        runId: f.input.runId,
        status: 'failed',
        judge: 'strict',
        models: [],
        spentUsd: 0,
        budgetUsd: 2,
        reportKey: null,
        error: 'States.TaskFailed: shard adamlite exited 1',
        summary: `rcb run ${f.input.runId} failed; spend $0.0000 of $2.00; States.TaskFailed: shard adamlite exited 1`,
      },
    ]);
  });
});

describe('EventBridgePublisher', () => {
  it('puts one entry on the named bus: source rcb, the detail as JSON', async () => {
    // Prepare: the emulator's local API answers PutEvents as EventBridge does.
    const received: PutEventsEntry[] = [];
    const api = await startLocalAwsApi({ onMessages: () => undefined, secrets: {}, onEvents: (e) => received.push(...e) });
    const client = createEventBridgeClient({ region: 'us-east-1', endpoint: api.endpoint, credentials: LOCAL_CREDENTIALS });
    const detail: RunEndedDetail = {
      runId: 'r1',
      status: 'succeeded',
      judge: 'strict',
      models: [{ model: 'oracle', scaledPass1: 100, scaledPass1Ci: { low: 100, high: 100 }, pass1: 100, pass1Ci: { low: 100, high: 100 }, tasks: 28 }],
      spentUsd: 0,
      budgetUsd: null,
      reportKey: 'runs/r1/reports/report.json',
      summary: 'rcb run r1 succeeded',
    };

    try {
      // Act
      await new EventBridgePublisher(client).publishRunEnded(detail);

      // Assess
      expect(received).toEqual([
        { Source: RUN_ENDED_EVENT.source, DetailType: RUN_ENDED_EVENT.detailType, EventBusName: 'default', Detail: JSON.stringify(detail) },
      ]);
    } finally {
      client.destroy();
      await api.close();
    }
  });
});
