/**
 * A stage of the cloud run (its Lambda entry point is functions/aggregate/handler.ts):
 * Aggregate (Step Functions task): score the run from its verdicts, write reports to
 * `runs/<runId>/reports/` in the bucket, set the final run status. A thin adapter over
 * core/cloud/aggregate-run.ts; a run with unjudged tasks (and no budget or cancel to
 * explain it) throws, which the workflow's catch path records. Its input carries the
 * evaluation Map Run's results (`mapResults`): the shards that failed every attempt, whose
 * tasks become infra_error.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_EVENT_BUS (the run-ended event's bus; RCB_EVENTS_ENDPOINT in the emulator).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { aggregateRun } from '../../core/cloud/aggregate-run';
import { aggregateInputSchema, parsePayload, type AggregateInput, type AggregateResult } from '../../core/cloud/payloads';
import type { BlobStore, RunStore } from '../../core/store';
import type { EnvironmentChecks } from '../../core/cloud/ports';
import type { EventPublisher } from '../../core/cloud/run-events';
import { runEventPublisher } from '../run-events';
import { loadEventsConfig, loadStorageConfig, type EventsConfig, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, type StageHandler, type StageTracer } from '../../adapters/aws/runtime/stage-lifecycle';
import type { CloudStage } from './cloud-stage';

export { aggregateInputSchema };
export type { AggregateInput, AggregateResult };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): { storage: StorageConfig; events?: EventsConfig } {
  return { storage: loadStorageConfig(env), events: loadEventsConfig(env) };
}

export interface AggregateHandlerDeps {
  store: RunStore;
  blobs: BlobStore;
  /** The shards' environment checks, which become the run's environment (env_broken papers). */
  environments?: EnvironmentChecks;
  /** Where the run-ended event goes (docs/cloud.md#run-events). @default none sent */
  events?: EventPublisher;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
}

export function createHandler(getDeps: () => AggregateHandlerDeps): StageHandler<unknown, AggregateResult> {
  return stageHandler({ failure: 'aggregation failed' }, getDeps, async (event: unknown, deps, invocation) => {
    const input = parsePayload(aggregateInputSchema, event, 'Aggregate input');
    invocation.annotate({ runId: input.runId });
    const summary = await aggregateRun(deps, input.runId, {
      ...(input.mapResults ? { mapResultsKey: input.mapResults.Key } : {}),
      ...(input.execution ? { execution: input.execution } : {}),
    });
    if (summary.eventError) deps.logger.warn('run-ended event not sent', { error: summary.eventError });
    deps.logger.info('run aggregated', { ...summary });
    deps.metrics.addMetric(`Runs_${summary.status}`, MetricUnit.Count, 1);
    return summary;
  });
}

/** The deployed function's: AWS adapters from its configuration. */
export function deployedAggregateDeps(config: { storage: StorageConfig; events?: EventsConfig }): AggregateHandlerDeps {
  const telemetry = lambdaTelemetry('aggregate');
  const events = runEventPublisher(config.events, { tracer: telemetry.tracer });
  return { ...createStorageAdapters(config.storage, { tracer: telemetry.tracer }), ...(events ? { events } : {}), ...telemetry };
}

/** The stage's entry of app/stages/index.ts. */
export const aggregateStage = {
  trigger: { state: 'Aggregate', placement: 'phase' },
  function: {
    construct: 'orchestrator',
    id: 'AggregateFunction',
    dir: 'aggregate',
    description: 'rcb: scores a run, writes its reports and summary, sets its final status',
  },
  loadConfig,
  deployedDeps: deployedAggregateDeps,
  localDeps: (parts) => ({ ...parts.storage, ...(parts.events ? { events: parts.events } : {}), ...parts.telemetry('aggregate') }),
  createHandler,
  monitoring: { name: 'aggregate' },
} satisfies CloudStage<{ storage: StorageConfig; events?: EventsConfig }, AggregateHandlerDeps>;
