/**
 * Reserved concurrency for the orchestration functions (PlanRun, CheckProgress, Aggregate,
 * MarkRunFailed): the generators of a busy sweep can take the account's whole unreserved pool,
 * and a throttled PlanRun or CheckProgress outlasts its retries and fails the run. Reserving
 * needs the account's concurrency to keep 100 unreserved beside it (docs/cloud.md
 * "Lambda concurrency").
 */
import type * as lambda from 'aws-cdk-lib/aws-lambda';

/** Concurrent executions reserved for each orchestration function: a few runs' steps at once. */
export const DEFAULT_ORCHESTRATION_RESERVED = 5;

/** What Lambda keeps unreserved in every account: reservations must leave it. */
export const LAMBDA_UNRESERVED_MINIMUM = 100;

/** Reserves `perFunction` concurrent executions for each function (0: none). */
export function reserveConcurrency(functions: readonly lambda.IFunction[], perFunction = DEFAULT_ORCHESTRATION_RESERVED): void {
  if (!Number.isInteger(perFunction) || perFunction < 0) throw new Error(`reserved concurrency must be a whole number >= 0 (got ${perFunction})`);
  if (perFunction === 0) return;
  for (const fn of functions) {
    const cfn = fn.node.defaultChild as lambda.CfnFunction | undefined;
    if (!cfn) throw new Error(`reserved concurrency: ${fn.node.path} is not a function of this stack`);
    cfn.reservedConcurrentExecutions = perFunction;
  }
}
