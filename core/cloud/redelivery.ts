/**
 * When a generation message the generator handed back comes round again. SQS hides a record
 * returned in `batchItemFailures` for the lane's whole visibility timeout (six times the
 * generator's timeout: an hour by default); the generator shortens that to a backoff that
 * grows with the record's deliveries (docs/cloud.md "Redelivery backoff").
 */

export interface RedeliveryPolicy {
  /** Delay after the first delivery failed, seconds. */
  baseSec: number;
  /** Each further delivery multiplies the delay by this. */
  factor: number;
  /** No delay is longer (the lane's visibility timeout is the natural cap). */
  capSec: number;
}

/**
 * 60 s, 3 min, 9 min, 27 min: the fifth delivery (the lanes' default maxReceiveCount) comes
 * about 40 minutes after the first, long enough to ride out a provider's short outage and
 * far less than the 4 hours four full visibility timeouts took.
 */
export const DEFAULT_REDELIVERY: RedeliveryPolicy = { baseSec: 60, factor: 3, capSec: 3600 };

/** SQS's largest visibility timeout, 12 hours. */
export const MAX_VISIBILITY_SEC = 43_200;

/** The delay before a record delivered `receiveCount` times (ApproximateReceiveCount, 1 on the first) comes back. */
export function redeliveryDelaySec(receiveCount: number, policy: RedeliveryPolicy = DEFAULT_REDELIVERY): number {
  const n = Number.isFinite(receiveCount) && receiveCount >= 1 ? Math.floor(receiveCount) : 1;
  const delay = policy.baseSec * policy.factor ** (n - 1);
  return Math.round(Math.min(policy.capSec, delay, MAX_VISIBILITY_SEC));
}

/** A record handed back, and how long it is to stay hidden. */
export interface ReturnedRecord {
  /** The queue's ARN (an SQS record's eventSourceARN). */
  queueArn: string;
  receiptHandle: string;
  /** Seconds until it is delivered again. */
  delaySec: number;
}

/** Hides handed-back records for their delay (ChangeMessageVisibility in AWS). */
export interface Redelivery {
  /** Resolves with the records whose delay could not be set (they come back after the full visibility timeout). */
  returnAfter(records: readonly ReturnedRecord[]): Promise<Array<ReturnedRecord & { reason: string }>>;
}
