/**
 * How often the run workflow checks generation progress, and what that costs in execution
 * history. A standard workflow's history holds at most 25,000 events; a fixed 30 s poll over a
 * 24 h generation deadline is 2,880 loops of about 9 events, past that limit before the
 * deadline can fail the run. The pause therefore grows with the run's age: the minimum while
 * the run is young (results come fast), a tenth of its age later, capped at the maximum, so
 * the loop count grows with the logarithm of the age up to the cap and linearly (slowly) after.
 */

export interface PollSchedule {
  /** Shortest pause, seconds (the first checks). */
  minSec: number;
  /** Longest pause, seconds. */
  maxSec: number;
}

/** Deployed defaults: a run's first five minutes are checked every 30 s; an old run every 5 min. */
export const DEFAULT_POLL_SCHEDULE: PollSchedule = { minSec: 30, maxSec: 300 };

/**
 * Pauses between two rounds of the batch lane (core/cloud/batch-round.ts): every minute while
 * the execution is young (most batches end within the hour), a tenth of its age later, at
 * most 20 minutes. Over the generation deadline (24 h, the providers' window), that is about
 * 100 rounds (test/infra/history-bound.test.ts counts their events).
 */
export const DEFAULT_BATCH_POLL_SCHEDULE: PollSchedule = { minSec: 60, maxSec: 1200 };

/**
 * How long before the generation deadline the batch lane cancels its pending batches, so that
 * they end (and what they answered is kept) before CheckProgress fails the run at the deadline.
 */
export const BATCH_CANCEL_GRACE_SEC = 3600;

/** The pause before the next check of a run that is `ageSec` old, whole seconds. */
export function pollWaitSec(ageSec: number, schedule: PollSchedule = DEFAULT_POLL_SCHEDULE): number {
  return Math.round(Math.min(schedule.maxSec, Math.max(schedule.minSec, ageSec / 10)));
}

/** Checks made from the run's start until its generation deadline (`deadlineSec`), the worst case: generation never finishes. */
export function pollCount(deadlineSec: number, schedule: PollSchedule = DEFAULT_POLL_SCHEDULE): number {
  let age = 0;
  let checks = 1;
  while (age <= deadlineSec) {
    age += pollWaitSec(age, schedule);
    checks++;
  }
  return checks;
}

/** A standard workflow's history limit (Step Functions quota). */
export const HISTORY_EVENT_LIMIT = 25_000;
