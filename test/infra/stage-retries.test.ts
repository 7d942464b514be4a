/**
 * The run workflow retries a function error (States.TaskFailed) on the stages safe to run
 * again, so one exception or timeout of CheckProgress does not fail an 18-hour sweep
 * (docs/cloud.md "Retries of the run workflow"); PlanRun, whose refusals are final, does not.
 */
import { STATE_NAMES } from '../../infra/state-names';
import { allStates, sharedStack, stateMachineDefinition } from './helpers';

const retriesOf = (name: string): Array<{ ErrorEquals: string[]; MaxAttempts?: number }> => {
  const states = allStates(stateMachineDefinition(sharedStack().template).States);
  const state = states[name];
  if (!state) throw new Error(`no state ${name} in the definition`);
  return state.Retry ?? [];
};

describe('retries of the run workflow', () => {
  it.each([STATE_NAMES.checkProgress, STATE_NAMES.aggregate, STATE_NAMES.markRunFailed])('%s retries its own errors after Lambda transient ones', (name) => {
    const retries = retriesOf(name);
    expect(retries[0].ErrorEquals).toContain('Lambda.TooManyRequestsException');
    expect(retries.find((r) => r.ErrorEquals.includes('States.TaskFailed'))).toMatchObject({ MaxAttempts: 3, IntervalSeconds: 5, JitterStrategy: 'FULL' });
  });

  it('PlanRun does not retry its own errors', () => {
    expect(retriesOf(STATE_NAMES.planRun).flatMap((r) => r.ErrorEquals)).not.toContain('States.TaskFailed');
  });
});
