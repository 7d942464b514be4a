import { Duration } from 'aws-cdk-lib';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';
import { LAMBDA_TRANSIENT_ERRORS, STATE_NAMES } from './state-names';

/**
 * The Retry every Lambda task state of the run workflow carries: throttling
 * (`Lambda.TooManyRequestsException`, a burst of runs or a reserved concurrency reached) and
 * the service's own transient errors, with exponential backoff and full jitter so that the
 * states a throttle hit together do not retry together. CDK's default (retryOnServiceExceptions)
 * omits TooManyRequestsException, so it is turned off and this one takes its place.
 * 2 s, 4 s, ... capped at 60 s: 8 attempts span about 4 minutes, longer than a throttle burst.
 */
export const LAMBDA_TRANSIENT_RETRY: sfn.RetryProps = {
  errors: [...LAMBDA_TRANSIENT_ERRORS],
  interval: Duration.seconds(2),
  maxAttempts: 8,
  backoffRate: 2,
  maxDelay: Duration.seconds(60),
  jitterStrategy: sfn.JitterType.FULL,
};

/**
 * The Retry of a stage that is safe to run again (it reads, or rewrites what it wrote): any
 * error of the function itself (`States.TaskFailed`: an exception, a timeout, an out-of-memory
 * end), three more times, 5 s, 10 s, 20 s with jitter. One such error no longer fails a run
 * that has been generating for hours (docs/cloud.md "Retries of the run workflow").
 */
export const LAMBDA_TASK_FAILED_RETRY: sfn.RetryProps = {
  errors: ['States.TaskFailed'],
  interval: Duration.seconds(5),
  maxAttempts: 3,
  backoffRate: 2,
  jitterStrategy: sfn.JitterType.FULL,
};

/**
 * The stages safe to run again: CheckProgress (it counts; the wave it writes is the same for
 * the same store), Aggregate (it rewrites its reports) and MarkRunFailed (it records the error).
 * PlanRun is not: its refusals (a sweep past rcb:maxShards) are final.
 */
export const IDEMPOTENT_STAGES: ReadonlySet<string> = new Set([STATE_NAMES.checkProgress, STATE_NAMES.aggregate, STATE_NAMES.markRunFailed]);

/**
 * A LambdaInvoke whose first Retry is LAMBDA_TRANSIENT_RETRY (the workflow's states add theirs
 * after it); an idempotent stage (by its state name) also retries its own errors.
 */
export function lambdaTask(scope: Construct, id: string, props: Omit<tasks.LambdaInvokeProps, 'retryOnServiceExceptions'>): tasks.LambdaInvoke {
  const task = new tasks.LambdaInvoke(scope, id, { ...props, retryOnServiceExceptions: false });
  task.addRetry(LAMBDA_TRANSIENT_RETRY);
  if (props.stateName && IDEMPOTENT_STAGES.has(props.stateName)) task.addRetry(LAMBDA_TASK_FAILED_RETRY);
  return task;
}
