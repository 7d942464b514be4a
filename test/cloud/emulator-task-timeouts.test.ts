/**
 * The emulator gives Task states Step Functions' behaviour when the definition sets no
 * timeout (none of their own), not aws-local-stepfunctions' 60 s default, which a loaded
 * machine reaches with a healthy function: recursively, and keeping timeouts that are set.
 */
import { UNBOUNDED_TASK_TIMEOUT_SEC, withStepFunctionsTaskTimeouts } from '../../emulator/workflow-definition';

describe('withStepFunctionsTaskTimeouts', () => {
  const states = {
    Plan: { Type: 'Task', Resource: 'arn:aws:states:::lambda:invoke', Next: 'Both' },
    Set: { Type: 'Task', Resource: 'x', TimeoutSeconds: 30, Next: 'Both' },
    ByPath: { Type: 'Task', Resource: 'x', TimeoutSecondsPath: '$.t', Next: 'Both' },
    Both: {
      Type: 'Parallel',
      Branches: [
        {
          StartAt: 'Shards',
          States: {
            Shards: {
              Type: 'Map',
              ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED' }, StartAt: 'Run', States: { Run: { Type: 'Task', Resource: 'y', End: true } } },
              End: true,
            },
          },
        },
      ],
      End: true,
    },
  };

  it('bounds only the Task states that set no timeout, at every depth', () => {
    const out = withStepFunctionsTaskTimeouts(states) as any;
    expect(out.Plan.TimeoutSeconds).toBe(UNBOUNDED_TASK_TIMEOUT_SEC);
    expect(out.Set.TimeoutSeconds).toBe(30);
    expect(out.ByPath.TimeoutSeconds).toBeUndefined();
    expect(out.ByPath.TimeoutSecondsPath).toBe('$.t');
    expect(out.Both.TimeoutSeconds).toBeUndefined();
    expect(out.Both.Branches[0].States.Shards.ItemProcessor.States.Run.TimeoutSeconds).toBe(UNBOUNDED_TASK_TIMEOUT_SEC);
    // The definition it was given is left as it was.
    expect((states.Plan as Record<string, unknown>).TimeoutSeconds).toBeUndefined();
  });

  it('stays within what a Node timer holds (a larger delay would fire at once)', () => {
    expect(UNBOUNDED_TASK_TIMEOUT_SEC * 1000).toBeLessThanOrEqual(2 ** 31 - 1);
    expect(UNBOUNDED_TASK_TIMEOUT_SEC).toBeGreaterThan(24 * 3600);
  });
});
