/**
 * The cloud task queue: generation messages on SQS, one queue per provider lane, so that
 * each lane's consumer concurrency (set on its event source mapping) bounds the calls in
 * flight to one provider. Messages are sent ten to a SendMessageBatch; entries SQS rejects
 * are retried with backoff, and what still fails is reported by run and task id.
 *
 * Standard queues deliver at least once: the generator is idempotent on the task id, so a
 * message sent twice (a retried batch, a re-run plan) costs nothing.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { GenerationMessage } from './messages';
import { mapLimit } from './map-limit';
import { laneOfProvider, providerLaneNames } from '../models/provider-lanes';

/** Each provider's lane, from the provider modules (adapters/models/provider-lanes.ts). */
export const DEFAULT_PROVIDER_LANES: Readonly<Record<string, string>> = providerLaneNames();

export interface LaneRouting {
  /** Queue URL of each lane, by lane name (RCB_LANE_QUEUES, which OrchestratorConstruct writes from the lanes). */
  queueUrls: Readonly<Record<string, string>>;
  /** Lane of the providers that have no lane of their own; must be a key of `queueUrls`. */
  defaultLane: string;
  /**
   * Provider -> lane, over DEFAULT_PROVIDER_LANES.
   * @default DEFAULT_PROVIDER_LANES alone
   */
  providerLanes?: Readonly<Record<string, string>>;
}

/**
 * The lane of a model provider: the routing's lane for it, else its lane in the provider lane
 * table, else a lane named like it, else the name an earlier deployment gave its lane, else
 * the default lane.
 */
export function laneForProvider(provider: string, routing: LaneRouting): string {
  const has = (lane: string | undefined): lane is string => lane !== undefined && Object.hasOwn(routing.queueUrls, lane);
  const explicit = routing.providerLanes?.[provider];
  if (explicit !== undefined) return has(explicit) ? explicit : routing.defaultLane;
  const { lane, formerLane } = laneOfProvider(provider);
  return [lane, provider, formerLane].find(has) ?? routing.defaultLane;
}

/** One task to enqueue, with the provider of its model (which picks the lane). */
export interface GenerationJob {
  message: GenerationMessage;
  provider: string;
}

/** A message SQS did not take. */
export interface UnsentMessage {
  lane: string;
  message: GenerationMessage;
  /** SQS's error code for the entry, e.g. `InternalError`. */
  code: string;
  reason: string;
  /** True when SQS blamed the message itself (retrying it would not help). */
  senderFault: boolean;
  attempts: number;
}

/** Some messages were not sent; `unsent` names them. Every other message was sent. */
export class EnqueueError extends Error {
  constructor(readonly unsent: UnsentMessage[]) {
    const shown = unsent
      .slice(0, 20)
      .map(
        (u) =>
          `run ${u.message.runId} task ${u.message.taskId} on lane ${u.lane} (${u.code}: ${u.reason}; ${u.attempts} attempt${u.attempts === 1 ? '' : 's'})`,
      );
    const more = unsent.length > 20 ? `, and ${unsent.length - 20} more` : '';
    super(`${unsent.length} generation message${unsent.length === 1 ? ' was' : 's were'} not sent: ${shown.join(', ')}${more}`);
    this.name = 'EnqueueError';
  }
}

export interface SqsTaskQueueOptions {
  /**
   * Attempts per message at SendMessageBatch entry level (the SDK retries whole-request
   * failures itself).
   * @default 5
   */
  maxAttempts?: number;
  /**
   * SendMessageBatch calls in flight at once.
   * @default 8
   */
  concurrency?: number;
  /**
   * First retry delay, doubled each attempt, with jitter.
   * @default 100
   */
  baseDelayMs?: number;
  /** @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
}

/** SQS takes at most ten entries per SendMessageBatch. */
const BATCH_MAX = 10;

/**
 * Generation jobs onto their providers' lane queues. The core TaskQueue port
 * (core/cloud/ports.ts) is LaneTaskQueue (adapters/aws/runtime/cloud-adapters.ts) over this.
 */
export class SqsTaskQueue {
  private readonly maxAttempts: number;
  private readonly concurrency: number;
  private readonly baseDelayMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly sqs: SQSClient,
    private readonly routing: LaneRouting,
    options: SqsTaskQueueOptions = {},
  ) {
    if (!Object.hasOwn(routing.queueUrls, routing.defaultLane)) {
      throw new Error(`default lane "${routing.defaultLane}" has no queue URL (lanes: ${Object.keys(routing.queueUrls).join(', ') || 'none'})`);
    }
    for (const [provider, lane] of Object.entries(routing.providerLanes ?? {})) {
      if (!Object.hasOwn(routing.queueUrls, lane)) throw new Error(`provider "${provider}" is routed to lane "${lane}", which has no queue URL`);
    }
    this.maxAttempts = options.maxAttempts ?? 5;
    this.concurrency = options.concurrency ?? 8;
    this.baseDelayMs = options.baseDelayMs ?? 100;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  laneOf(provider: string): string {
    return laneForProvider(provider, this.routing);
  }

  /** Sends every job to its provider's lane; resolves with the count sent per lane. */
  async enqueue(jobs: readonly GenerationJob[]): Promise<Record<string, number>> {
    const byLane = new Map<string, GenerationMessage[]>();
    for (const job of jobs) {
      const lane = this.laneOf(job.provider);
      let messages = byLane.get(lane);
      if (!messages) byLane.set(lane, (messages = []));
      messages.push(job.message);
    }
    const batches: { lane: string; messages: GenerationMessage[] }[] = [];
    for (const [lane, messages] of byLane) {
      for (let i = 0; i < messages.length; i += BATCH_MAX) batches.push({ lane, messages: messages.slice(i, i + BATCH_MAX) });
    }
    const unsent = (await mapLimit(batches, this.concurrency, (b) => this.sendBatch(b.lane, b.messages))).flat();
    if (unsent.length > 0) throw new EnqueueError(unsent);
    const sent: Record<string, number> = {};
    for (const [lane, messages] of byLane) sent[lane] = messages.length;
    return sent;
  }

  /** Sends up to ten messages to one lane; returns the ones that could not be sent. */
  private async sendBatch(lane: string, messages: GenerationMessage[]): Promise<UnsentMessage[]> {
    const queueUrl = this.routing.queueUrls[lane];
    // Entry ids are positions in the batch: task ids may be longer than SQS's 80 characters.
    let pending = messages.map((message, i) => ({ id: String(i), message }));
    const unsent: UnsentMessage[] = [];
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > 1) await this.sleep(this.baseDelayMs * 2 ** (attempt - 2) * (0.5 + Math.random() / 2));
      const res = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: pending.map((p) => ({ Id: p.id, MessageBody: JSON.stringify(p.message) })),
        }),
      );
      const taken = new Set((res.Successful ?? []).map((s) => s.Id));
      const failures = new Map((res.Failed ?? []).map((f) => [f.Id, f]));
      const retry: typeof pending = [];
      for (const entry of pending) {
        if (taken.has(entry.id)) continue;
        // An entry in neither list was not taken either: retry it like a server-side failure.
        const failure = failures.get(entry.id) ?? { Code: 'NotReported', Message: 'SQS reported neither success nor failure', SenderFault: false };
        const senderFault = failure.SenderFault === true;
        if (senderFault || attempt >= this.maxAttempts) {
          unsent.push({
            lane,
            message: entry.message,
            code: failure.Code ?? 'Unknown',
            reason: failure.Message ?? 'no message',
            senderFault,
            attempts: attempt,
          });
        } else retry.push(entry);
      }
      pending = retry;
    }
    return unsent;
  }
}
