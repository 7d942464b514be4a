/**
 * Schedules of cloud runs (`rcb cloud schedule add|list|remove`): a cron expression and the
 * workflow input `rcb cloud run` would start with the same flags, so each firing starts the
 * same run id, budget included (docs/cloud.md#schedules). EventBridge Scheduler in AWS, a file
 * of the state folder in the emulator.
 */
import type { RunWorkflowInput } from './payloads';

/** A schedule's name, expression or input that Scheduler would refuse (the CLI prints it as a usage error). */
export class ScheduleInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScheduleInputError';
  }
}

/** A schedule as stored: its name, when it fires, and the input its firing starts the run workflow with. */
export interface RunSchedule {
  name: string;
  /** The six fields of an EventBridge Scheduler cron expression, e.g. `0 2 ? * MON-FRI *`. */
  cron: string;
  /** IANA time zone of the expression. @default UTC */
  timezone: string;
  /** ENABLED or DISABLED. */
  state: string;
  input: RunWorkflowInput;
}

/** Where schedules are kept. */
export interface RunScheduler {
  /** Creates the schedule; refuses a name in use. */
  create(schedule: RunSchedule): Promise<void>;
  list(): Promise<RunSchedule[]>;
  /** Deletes the schedule; false when there is none of that name. */
  remove(name: string): Promise<boolean>;
}

/** EventBridge Scheduler's limit on a target's input, characters. */
export const MAX_SCHEDULE_INPUT_CHARS = 8192;

/**
 * The cron expression checked as EventBridge Scheduler reads it: six fields (minutes, hours,
 * day of month, month, day of week, year), one of day of month and day of week `?`.
 */
export function checkCron(expr: string): string {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 6) {
    throw new ScheduleInputError(
      `--cron takes six fields (minutes hours day-of-month month day-of-week year), e.g. "0 2 ? * MON-FRI *"; got ${fields.length} in "${expr}"`,
    );
  }
  if ((fields[2] === '?') === (fields[4] === '?')) {
    throw new ScheduleInputError(`--cron: exactly one of day-of-month (3rd field) and day-of-week (5th) must be "?"; got "${expr}"`);
  }
  return fields.join(' ');
}

/** A schedule's name as Scheduler accepts it: 1-64 of letters, digits, `.`, `-`, `_`. */
export function checkScheduleName(name: string): string {
  if (!/^[0-9a-zA-Z._-]{1,64}$/.test(name)) throw new ScheduleInputError(`schedule name "${name}": 1 to 64 letters, digits, ".", "-" or "_"`);
  return name;
}

/** The input as the schedule's target carries it, refused when Scheduler would refuse it. */
export function scheduleInputText(input: RunWorkflowInput): string {
  const text = JSON.stringify(input);
  if (text.length > MAX_SCHEDULE_INPUT_CHARS) {
    throw new ScheduleInputError(
      `the run's workflow input is ${text.length} characters, more than the ${MAX_SCHEDULE_INPUT_CHARS} a schedule's target may carry: schedule fewer models`,
    );
  }
  return text;
}

/** One line of `rcb cloud schedule list`. */
export function scheduleLine(s: RunSchedule): string {
  const spec = s.input.spec;
  const budget = spec.budgetUsd === null ? 'no budget' : `budget $${spec.budgetUsd.toFixed(2)}`;
  return `${s.name}  cron(${s.cron}) ${s.timezone}  ${s.state}  run ${s.input.runId}  ${spec.models.map((m) => m.id).join(', ')}  ${budget}`;
}
