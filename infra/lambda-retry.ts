import { Duration } from 'aws-cdk-lib';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';
import { LAMBDA_TRANSIENT_ERRORS } from './state-names';

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

/** A LambdaInvoke whose first Retry is LAMBDA_TRANSIENT_RETRY (the workflow's states add theirs after it). */
export function lambdaTask(scope: Construct, id: string, props: Omit<tasks.LambdaInvokeProps, 'retryOnServiceExceptions'>): tasks.LambdaInvoke {
  const task = new tasks.LambdaInvoke(scope, id, { ...props, retryOnServiceExceptions: false });
  task.addRetry(LAMBDA_TRANSIENT_RETRY);
  return task;
}
