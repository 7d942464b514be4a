/**
 * A stage of the cloud run (its Lambda entry point is functions/aggregate/handler.ts):
 * Aggregate (Step Functions task): score the run from its verdicts, write reports to
 * `runs/<runId>/reports/` in the bucket, set the final run status. A thin adapter over
 * core/cloud/aggregate-run.ts; a run with unjudged tasks (and no budget or cancel to
 * explain it) throws, which the workflow's catch path records. Its input carries the
 * evaluation Map Run's results (`mapResults`): the shards that failed every attempt, whose
 * tasks become infra_error.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { aggregateRun } from '../../core/cloud/aggregate-run';
import { aggregateInputSchema, parsePayload, type AggregateInput, type AggregateResult } from '../../core/cloud/payloads';
import type { BlobStore, RunStore } from '../../core/store';
import type { EnvironmentChecks } from '../../core/cloud/ports';
import { loadStorageConfig, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';

export { aggregateInputSchema };
export type { AggregateInput, AggregateResult };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): { storage: StorageConfig } {
  return { storage: loadStorageConfig(env) };
}

export interface AggregateHandlerDeps {
  store: RunStore;
  blobs: BlobStore;
  /** The shards' environment checks, which become the run's environment (env_broken papers). */
  environments?: EnvironmentChecks;
  logger: Logger;
  metrics: Metrics;
}

export function createHandler(getDeps: () => AggregateHandlerDeps): (event: unknown) => Promise<AggregateResult> {
  return async (event) => {
    const input = parsePayload(aggregateInputSchema, event, 'Aggregate input');
    const deps = getDeps();
    deps.logger.appendKeys({ runId: input.runId });
    try {
      const summary = await aggregateRun(deps, input.runId, {
        ...(input.mapResults ? { mapResultsKey: input.mapResults.Key } : {}),
        ...(input.execution ? { execution: input.execution } : {}),
      });
      deps.logger.info('run aggregated', { ...summary });
      deps.metrics.addMetric(`Runs_${summary.status}`, MetricUnit.Count, 1);
      return summary;
    } catch (err) {
      deps.logger.error('aggregation failed', err as Error);
      throw err;
    } finally {
      deps.metrics.publishStoredMetrics();
      deps.logger.removeKeys(['runId']);
    }
  };
}

/** The deployed function's: AWS adapters from its configuration. */
export function deployedAggregateDeps(config: { storage: StorageConfig }): AggregateHandlerDeps {
  return {
    ...createStorageAdapters(config.storage),
    logger: new Logger({ serviceName: 'rcb-aggregate' }),
    metrics: new Metrics({ namespace: 'rcb', serviceName: 'aggregate' }),
  };
}
