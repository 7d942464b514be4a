/**
 * A run's executions. Step Functions keeps a closed execution's name for 90 days, so a run
 * that failed, timed out or was aborted cannot start again under its run id: each attempt
 * gets its own name, `<runId>`, then `<runId>-2`, `<runId>-3`, ... The run id stays the
 * identity (tables and bucket keys); the attempt only names the execution, and the new one
 * resumes from what is stored (PlanRun re-sends only unanswered tasks and those whose
 * answer was an error, shards judge only unjudged candidates). Starting a run whose latest
 * attempt is running starts nothing and follows that one; one whose latest attempt
 * succeeded too, unless the caller says the run has failed tasks to ask again.
 */

/** Status of an execution, as Step Functions names it. */
export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED' | 'PENDING_REDRIVE';

/** What the attempt logic needs of Step Functions (the CLI binds it to the SDK; tests to a map). */
export interface ExecutionPort {
  /** Starts an execution of the run workflow under `name`; false when the name is taken. */
  start(name: string): Promise<boolean>;
  /** Status of the execution `name`, or null when there is none. */
  status(name: string): Promise<ExecutionStatus | null>;
}

/** What Step Functions says of one execution (DescribeExecution's fields that rcb prints). */
export interface ExecutionDescription {
  status: ExecutionStatus;
  startDate?: Date;
  stopDate?: Date;
  /** Error name and cause of an execution that failed. */
  error?: string;
  cause?: string;
}

/**
 * A run's executions for the commands that follow, report on and stop a run: the SDK in
 * AWS, the emulator's records of its executions locally (emulator/emulator-state.ts).
 */
export interface RunExecutions extends ExecutionPort {
  /** The execution `name`, or null when there is none. */
  describe(name: string): Promise<ExecutionDescription | null>;
  /** Stops the execution `name` at once (StopExecution), with the error and cause it then carries. */
  stop(name: string, error: string, cause: string): Promise<void>;
}

/** Attempts at most; far beyond any restart by hand, it only stops a runaway loop. */
export const MAX_ATTEMPTS = 100;

/** Execution name of a run's attempt (1-based). */
export function attemptName(runId: string, attempt: number): string {
  return attempt === 1 ? runId : `${runId}-${attempt}`;
}

/** Ended without success: the run may start again under the next name. */
const RESTARTABLE: ReadonlySet<ExecutionStatus> = new Set(['FAILED', 'TIMED_OUT', 'ABORTED']);

export interface Attempt {
  name: string;
  attempt: number;
  /** This call started it (else it was running or had succeeded). */
  started: boolean;
  /** The earlier attempts' statuses, oldest first (all restartable). */
  earlier: ExecutionStatus[];
}

export interface StartOrFollowOptions {
  /**
   * Asked when the latest execution succeeded: true starts the next attempt anyway (the run
   * has failed tasks a new attempt would ask again, as `rcb run` of a finished local run
   * does). @default never
   */
  restartSucceeded?: () => Promise<boolean>;
}

/** Starts the run's next attempt, or finds the one running or succeeded. */
export async function startOrFollow(port: ExecutionPort, runId: string, options: StartOrFollowOptions = {}): Promise<Attempt> {
  const earlier: ExecutionStatus[] = [];
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const name = attemptName(runId, attempt);
    if (await port.start(name)) return { name, attempt, started: true, earlier };
    const status = await port.status(name);
    if (status === null) throw new Error(`execution ${name} could not be started, yet does not exist`);
    if (!RESTARTABLE.has(status)) {
      // A succeeded attempt is passed over when a later one exists (a restart of it) or the caller wants one.
      const passed = status === 'SUCCEEDED' && ((await port.status(attemptName(runId, attempt + 1))) !== null || !!(await options.restartSucceeded?.()));
      if (!passed) return { name, attempt, started: false, earlier };
    }
    earlier.push(status);
  }
  throw new Error(`run ${runId} has ${MAX_ATTEMPTS} executions; start it under a new spec`);
}

/** The run's latest attempt (the highest name that exists), or null when it never started. */
export async function latestAttempt(
  port: Pick<ExecutionPort, 'status'>,
  runId: string,
): Promise<{ name: string; attempt: number; status: ExecutionStatus } | null> {
  let found: { name: string; attempt: number; status: ExecutionStatus } | null = null;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const name = attemptName(runId, attempt);
    const status = await port.status(name);
    if (status === null) break;
    found = { name, attempt, status };
  }
  return found;
}
