/**
 * A stage of the cloud run (its Lambda entry point is functions/dead-letter/handler.ts):
 * DeadLetter (each lane's DLQ -> Lambda, ReportBatchItemFailures): a generation message
 * that exhausted its deliveries becomes a failed completion of its task
 * (core/cloud/settle-dead-letter.ts), so CheckProgress sees the task settled and the run
 * goes on to evaluation instead of waiting for its generation deadline. Counted as
 * Tasks_dead_lettered (the lane's DLQ alarm no longer sees these messages: they are consumed).
 * A malformed body is logged and acknowledged: it names no task to settle.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { settleDeadLetter, type SettleDeadLetterOutcome } from '../../core/cloud/settle-dead-letter';
import type { RunStore } from '../../core/store';
import type { TaskRecord } from '../../core/records';
import type { RunCounters } from '../../core/cloud/ports';
import { MessageFormatError, parseGenerationMessage } from '../../adapters/aws/messages';
import { loadStorageConfig, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, type StageTracer } from '../../adapters/aws/runtime/stage-lifecycle';
import type { CloudStage } from './cloud-stage';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): { storage: StorageConfig } {
  return { storage: loadStorageConfig(env) };
}

export interface DeadLetterHandlerDeps {
  store: RunStore;
  counters?: RunCounters;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
}

export function createHandler(getDeps: () => DeadLetterHandlerDeps): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  // Tasks by run, per warm instance: a run's plan never changes.
  const tasks = new Map<string, Promise<Map<string, TaskRecord>>>();
  return stageHandler({ failure: 'dead letters not settled' }, getDeps, async (event: SQSEvent, deps, _invocation, context) => {
    const tasksOf = (runId: string): Promise<Map<string, TaskRecord>> => {
      let hit = tasks.get(runId);
      if (!hit) {
        hit = deps.store.listTasks(runId).then((list) => new Map(list.map((t) => [t.taskId, t])));
        hit.catch(() => tasks.delete(runId));
        tasks.set(runId, hit);
      }
      return hit;
    };
    const recordHandler = async (record: SQSRecord): Promise<SettleDeadLetterOutcome | 'malformed'> => {
      let message;
      try {
        message = parseGenerationMessage(record.body);
      } catch (err) {
        if (!(err instanceof MessageFormatError)) throw err;
        deps.logger.error('dead letter is not a generation message; dropped', { error: err.message });
        return 'malformed';
      }
      const receiveCount = Number(record.attributes?.ApproximateReceiveCount) || undefined;
      const outcome = await settleDeadLetter({ store: deps.store, counters: deps.counters, tasksOf }, message, receiveCount);
      deps.logger.warn('dead-lettered task settled', { runId: message.runId, taskId: message.taskId, outcome });
      deps.metrics.addMetric(`Tasks_dead_lettered_${outcome}`, MetricUnit.Count, 1);
      return outcome;
    };
    return processPartialResponse(event, recordHandler, new BatchProcessor(EventType.SQS), {
      context: context as Context,
      throwOnFullBatchFailure: false,
    });
  });
}

/** The deployed function's: AWS adapters from its configuration. */
export function deployedDeadLetterDeps(config: { storage: StorageConfig }): DeadLetterHandlerDeps {
  const telemetry = lambdaTelemetry('dead-letter');
  return { ...createStorageAdapters(config.storage, { tracer: telemetry.tracer }), ...telemetry };
}

/** The stage's entry of app/stages/index.ts: the consumer of the lanes' dead-letter queues. */
export const deadLetterStage = {
  trigger: { queues: 'dead-letters' },
  function: {
    construct: 'generation',
    id: 'DeadLetter',
    dir: 'dead-letter',
    description: 'rcb: settles each dead-lettered generation message as a failed completion of its task',
  },
  loadConfig,
  deployedDeps: deployedDeadLetterDeps,
  localDeps: (parts) => ({ store: parts.storage.store, counters: parts.storage.counters, ...parts.telemetry('dead-letter') }),
  createHandler,
  monitoring: { name: 'dead-letter' },
} satisfies CloudStage<{ storage: StorageConfig }, DeadLetterHandlerDeps>;
