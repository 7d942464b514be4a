/**
 * SQS lanes feeding the generator, simulated: PlanRun's TaskQueue collects the messages,
 * and they are delivered to the generate handler in SQS-shaped batches, at least once, as
 * the event source mapping would: records the handler reports in `batchItemFailures` come
 * back until `maxReceiveCount` deliveries, then go to a dead-letter list. A failed record
 * stays hidden for the visibility timeout, which the deployed lanes set far longer than an
 * invocation: here, until every delivery in flight when it failed has ended.
 *
 * `deliverTwice` makes SQS's at-least-once delivery certain: every message is delivered a
 * second time, either in a later batch once its first delivery has been handled (`true`),
 * or at the same time as the first (`'overlapping'`): the batch and a batch of its copies
 * go to the handler concurrently, as two Lambda instances would receive them. The copy
 * that finds the other's generation claim taken fails back to the queue and, redelivered,
 * finds the completion stored; no task's model is called twice.
 */
import { randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { QueuedGeneration, TaskQueue } from '../core/cloud/ports';

export interface SimulatedLanesOptions {
  /** Records per batch (the lane's event source batch size). @default 10 */
  batchSize?: number;
  /** Batches in flight at once (the lane's maximum concurrency). @default 4 */
  concurrency?: number;
  /**
   * Deliver every message twice: the copy in a later batch, after the first delivery is
   * handled (`true`), or alongside the first, in a concurrent handler call (`'overlapping'`).
   * @default false
   */
  deliverTwice?: boolean | 'overlapping';
  /** Deliveries of a failing record before it is dead-lettered (the redrive policy). @default 3 */
  maxReceiveCount?: number;
  /**
   * The consumer of the dead-letter queue: each dead-lettered message is handed to it in an
   * SQS-shaped batch of one, as the DLQ's event source mapping would. @default none (kept in stats only)
   */
  deadLetterHandler?: GenerateHandler;
}

export type GenerateHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

interface Pending {
  messageId: string;
  body: string;
  receiveCount: number;
  /**
   * A second copy is still to be delivered (deliverTwice): after this delivery is handled
   * (`later`), or alongside it (`overlapping`).
   */
  duplicate?: 'later' | 'overlapping';
}

export interface LaneStats {
  /** Messages PlanRun sent. */
  sent: number;
  /** Records delivered to the handler, redeliveries and duplicates included. */
  delivered: number;
  /** Records the handler reported failed. */
  failedRecords: number;
  /** Messages dead-lettered after maxReceiveCount deliveries. */
  deadLettered: string[];
}

export class SimulatedLanes implements TaskQueue {
  readonly stats: LaneStats = { sent: 0, delivered: 0, failedRecords: 0, deadLettered: [] };
  private readonly pending: Pending[] = [];
  private inFlight = 0;
  /** Deliveries in progress (a batch, with its overlapping copies). */
  private readonly flights = new Set<Promise<void>>();
  /** Failed records waiting out their visibility timeout. */
  private hidden = 0;
  private readonly idleWaiters: Array<() => void> = [];
  private readonly errors: unknown[] = [];
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly maxReceiveCount: number;

  constructor(
    private readonly handler: GenerateHandler,
    private readonly options: SimulatedLanesOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 10;
    this.concurrency = options.concurrency ?? 4;
    this.maxReceiveCount = options.maxReceiveCount ?? 3;
  }

  /** PlanRun's enqueue: the messages are queued and delivery starts in the background. */
  async send(messages: QueuedGeneration[]): Promise<void> {
    const twice = this.options.deliverTwice;
    const duplicate = twice === 'overlapping' ? 'overlapping' : twice ? 'later' : undefined;
    const fresh: Pending[] = messages.map((m) => ({ messageId: randomUUID(), body: JSON.stringify(m.message), receiveCount: 0, duplicate }));
    this.stats.sent += fresh.length;
    this.pending.push(...fresh);
    this.pump();
  }

  /** Resolves when every message is delivered (or dead-lettered); rejects if a batch threw. */
  async drained(): Promise<void> {
    if (!this.idle()) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    if (this.errors.length) throw this.errors[0];
  }

  private idle(): boolean {
    return !this.pending.length && !this.inFlight && !this.hidden;
  }

  private settle(): void {
    this.pump();
    if (this.idle()) this.idleWaiters.splice(0).forEach((w) => w());
  }

  private pump(): void {
    while (this.inFlight < this.concurrency && this.pending.length) {
      const batch = this.pending.splice(0, this.batchSize);
      // Overlapping copies: a second handler call at the same time, as a second instance.
      const copies: Pending[] = [];
      for (const p of batch) {
        if (p.duplicate !== 'overlapping') continue;
        p.duplicate = undefined;
        copies.push({ ...p, receiveCount: 0 });
      }
      this.inFlight++;
      const flight = Promise.all([this.deliver(batch), ...(copies.length ? [this.deliver(copies)] : [])]).then(() => undefined);
      this.flights.add(flight);
      void flight.finally(() => {
        this.inFlight--;
        this.flights.delete(flight);
        this.settle();
      });
    }
  }

  /** A failed record comes back once every delivery now in flight (its own included) has ended. */
  private redeliverLater(p: Pending): void {
    this.hidden++;
    void Promise.allSettled([...this.flights]).then(() => {
      this.hidden--;
      this.pending.push(p);
      this.settle();
    });
  }

  /** To the dead-letter list, and to its consumer; the lanes are not idle until it has answered. */
  private deadLetter(p: Pending): void {
    this.stats.deadLettered.push(p.body);
    const consumer = this.options.deadLetterHandler;
    if (!consumer) return;
    this.hidden++;
    void consumer({ Records: [toRecord({ ...p, messageId: randomUUID() })] })
      .then((response) => {
        if (response.batchItemFailures.length) this.errors.push(new Error(`the dead-letter consumer failed on ${p.body}`));
      })
      .catch((err) => this.errors.push(err))
      .finally(() => {
        this.hidden--;
        this.settle();
      });
  }

  private async deliver(batch: Pending[]): Promise<void> {
    for (const p of batch) p.receiveCount++;
    this.stats.delivered += batch.length;
    let response: SQSBatchResponse;
    try {
      response = await this.handler({ Records: batch.map(toRecord) });
    } catch (err) {
      // The whole batch failed (a thrown handler): SQS would redeliver every record.
      this.errors.push(err);
      response = { batchItemFailures: batch.map((p) => ({ itemIdentifier: p.messageId })) };
    }
    const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
    this.stats.failedRecords += failed.size;
    for (const p of batch) {
      if (p.duplicate === 'later') {
        // The copy goes to the back of the queue: a later batch, after this delivery.
        p.duplicate = undefined;
        this.pending.push({ ...p, receiveCount: 0 });
      }
      if (!failed.has(p.messageId)) continue;
      if (p.receiveCount >= this.maxReceiveCount) this.deadLetter(p);
      else this.redeliverLater(p);
    }
  }
}

function toRecord(p: Pending): SQSRecord {
  const now = String(Date.now());
  return {
    messageId: p.messageId,
    receiptHandle: `emulated-${p.messageId}-${p.receiveCount}`,
    body: p.body,
    attributes: {
      ApproximateReceiveCount: String(p.receiveCount),
      SentTimestamp: now,
      SenderId: 'emulated',
      ApproximateFirstReceiveTimestamp: now,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:emulated-lane',
    awsRegion: 'us-east-1',
  };
}
