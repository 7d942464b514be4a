/**
 * The run workflow's execution history stays under Step Functions' 25,000-event limit in the
 * longest run it allows: generation that never finishes until the run's deadline (24 h, and
 * the longest a run may ask for, 48 h; every progress check taken, every Lambda retry of each
 * taken, every check dispatching a wave of shards) while, beside it, the batch lane polls a
 * batch that never ends until that deadline (every round with every retry), the largest
 * sweep the deployment admits (RCB_MAX_SHARDS shards) evaluated in those waves with every
 * retry and the on-demand fallback taken. Each wave is a Distributed Map: each shard a child
 * execution with its own history, the parent's holding a Map Run's events whatever the
 * wave's size; so the bound is two numbers, the parent's and one child's. Counted from
 * the synthesized definition itself, so a change of a loop, of a Retry, of a poll schedule
 * or of the Map's kind moves the bound.
 */
import { DEFAULT_BATCH_POLL_SCHEDULE, pollCount, pollWaitSec, DEFAULT_POLL_SCHEDULE, HISTORY_EVENT_LIMIT } from '../../core/cloud/generation-polling';
import { LAMBDA_TRANSIENT_ERRORS, MAP_MAX_CONCURRENCY, STATE_NAMES } from '../../infra/state-names';
import { MAX_SHARDS_DEFAULT } from '../../core/cloud/shard-plan';
import { MAX_DEADLINE_SEC } from '../../core/cloud/payloads';
import { scheduleForDeadline } from '../../core/cloud/check-progress';
import { allStates, sharedStack, stateMachineDefinition } from './helpers';

type State = Record<string, any>;

/** Events of one Task state that succeeds after every retry its Retry list allows (or at once: `happy`). */
function worstTaskEvents(state: State, happy = false): number {
  // Entered, Scheduled, Started, (Submitted for .sync), Succeeded, Exited.
  const sync = typeof state.Resource === 'string' && state.Resource.endsWith('.sync');
  const attempt = sync ? 4 : 3;
  const retries = happy ? 0 : ((state.Retry ?? []) as State[]).reduce((n, r) => n + (r.MaxAttempts ?? 3), 0);
  return 2 + attempt + retries * attempt;
}

function events(state: State, happy = false): number {
  if (state.Type === 'Task') return worstTaskEvents(state, happy);
  // Entered, Started, Succeeded, Exited, and each branch's start and end.
  if (state.Type === 'Parallel') return 4 + 2 * state.Branches.length;
  return 2; // Entered, Exited (Choice, Wait, Pass, Succeed, Fail).
}

describe('the run workflow history', () => {
  const template = sharedStack().template;
  const definition = stateMachineDefinition(template);
  const states = allStates(definition.States) as Record<string, State>;
  const env = (name: string): string =>
    Object.values(template.toJSON().Resources as Record<string, State>)
      .map((r) => r.Properties?.Environment?.Variables?.[name])
      .find((v) => v !== undefined);

  it('waits longer as the run ages: 30 s at first, 5 min once it is 50 min old', () => {
    expect([pollWaitSec(0), pollWaitSec(299), pollWaitSec(600), pollWaitSec(3000), pollWaitSec(86_400)]).toEqual([30, 30, 60, 300, 300]);
  });

  it('reads each pause from CheckProgress (no fixed Wait)', () => {
    // Assess
    expect(states[STATE_NAMES.waitForGeneration]).toMatchObject({ Type: 'Wait', SecondsPath: '$.progress.waitSec' });
    expect(states[STATE_NAMES.waitForGeneration].Seconds).toBeUndefined();
    expect(definition.StartAt).toBe(STATE_NAMES.planRun);
    expect(states[STATE_NAMES.planRun].Next).toBe(STATE_NAMES.generate);
    expect(states[STATE_NAMES.waitForBatches]).toMatchObject({ Type: 'Wait', SecondsPath: '$.batch.waitSec' });
  });

  /** Events of a Distributed Map state in its parent: entered, MapRunStarted, MapRunSucceeded (or Failed), exited. */
  const DISTRIBUTED_MAP_EVENTS = 4;

  it('evaluates in a Distributed Map of Standard children that tolerates every failed shard, within its concurrency limit', () => {
    const map = states[STATE_NAMES.evaluateShards];
    expect(map.ItemProcessor.ProcessorConfig).toEqual({ Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' });
    expect(map.ItemReader).toMatchObject({ Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSON' } });
    // One wave of ready shards, as CheckProgress wrote it.
    expect(map.ItemReader.Parameters['Key.$']).toBe('$.progress.wave.key');
    expect(map.ItemsPath).toBeUndefined();
    expect(map.ToleratedFailurePercentage).toBe(100);
    expect(map.ResultWriter).toMatchObject({ Resource: 'arn:aws:states:::s3:putObject' });
    expect(map.MaxConcurrency).toBeLessThanOrEqual(MAP_MAX_CONCURRENCY.distributed);
  });

  it('retries throttling and transient service errors on every Lambda task state', () => {
    const lambdaStates = Object.entries(states).filter(([, s]) => s.Type === 'Task' && String(s.Resource).includes(':lambda:'));
    expect(lambdaStates.map(([n]) => n).sort()).toEqual(
      [STATE_NAMES.planRun, STATE_NAMES.checkProgress, STATE_NAMES.batchRound, STATE_NAMES.aggregate, STATE_NAMES.markRunFailed].sort(),
    );
    for (const [name, state] of lambdaStates) {
      const retry = (state.Retry as State[]).find((r) => r.ErrorEquals.includes('Lambda.TooManyRequestsException'));
      expect([name, retry?.ErrorEquals]).toEqual([name, [...LAMBDA_TRANSIENT_ERRORS]]);
      expect([name, retry?.BackoffRate, retry?.JitterStrategy]).toEqual([name, 2, 'FULL']);
    }
  });

  it('holds fewer than 25,000 events in the longest run it allows, for the largest sweep it admits, happy and worst case', () => {
    // Prepare: the deployed schedule and largest sweep; the longest deadline a run may ask for.
    const stackDeadlineSec = Number(env('RCB_GENERATION_TIMEOUT_SEC'));
    const base = { minSec: Number(env('RCB_POLL_MIN_SEC')), maxSec: Number(env('RCB_POLL_MAX_SEC')) };
    const batchBase = { minSec: Number(env('RCB_BATCH_POLL_MIN_SEC')), maxSec: Number(env('RCB_BATCH_POLL_MAX_SEC')) };
    expect([stackDeadlineSec, base, batchBase]).toEqual([24 * 3600, DEFAULT_POLL_SCHEDULE, DEFAULT_BATCH_POLL_SCHEDULE]);
    const maxShards = Number(env('RCB_MAX_SHARDS'));
    expect(maxShards).toBe(MAX_SHARDS_DEFAULT);
    // The loop: CheckProgress, GenerationDone?, then the wave's Map Run (pipelined evaluation:
    // at most one wave per check) and the Wait; StartWaves once.
    expect(states[STATE_NAMES.generationDone].Choices[0]).toEqual({ Variable: '$.progress.wave', IsPresent: true, Next: STATE_NAMES.evaluateShards });
    expect(states[STATE_NAMES.evaluateShards].Next).toBe(STATE_NAMES.waitForGeneration);
    expect(states[STATE_NAMES.waitForGeneration].Next).toBe(STATE_NAMES.checkProgress);

    const bound = (deadlineSec: number, happy: boolean) => {
      const schedule = scheduleForDeadline(deadlineSec, base);
      // Every check until the deadline, each dispatching a wave; then the last wave and the check that ends the loop.
      const checks = pollCount(deadlineSec, schedule) + 2;
      const loop =
        events(states[STATE_NAMES.checkProgress], happy) +
        events(states[STATE_NAMES.generationDone]) +
        DISTRIBUTED_MAP_EVENTS +
        events(states[STATE_NAMES.waitForGeneration]);
      // The batch lane: a round (with every retry), its Choice and its Wait, until the run's deadline
      // (past which a round fails the run; it cancelled its batches BATCH_CANCEL_GRACE_SEC before).
      const rounds = pollCount(deadlineSec, scheduleForDeadline(deadlineSec, batchBase));
      const laneLoop = events(states[STATE_NAMES.batchRound], happy) + events(states[STATE_NAMES.batchesPending]) + events(states[STATE_NAMES.waitForBatches]);
      const lane = rounds * laneLoop + events(states[STATE_NAMES.batchLane]) + events(states[STATE_NAMES.batchesDone]);
      const once =
        [STATE_NAMES.planRun, STATE_NAMES.generate, STATE_NAMES.startWaves, STATE_NAMES.lanesSettled, STATE_NAMES.aggregate, STATE_NAMES.succeeded].reduce(
          (n, s) => n + events(states[s], happy),
          2,
        ) + 4;
      return { checks, loop, rounds, laneLoop, once, parent: checks * loop + lane + once };
    };
    // One child: started and ended, Spot with every retry, on-demand with every retry, ShardFailed.
    const inner = states[STATE_NAMES.evaluateShards].ItemProcessor.States as Record<string, State>;
    const child = 2 + events(inner[STATE_NAMES.evaluateShard]) + events(inner[STATE_NAMES.evaluateShardOnDemand]) + events(inner[STATE_NAMES.shardFailed]);
    const childHappy = 2 + events(inner[STATE_NAMES.evaluateShard], true);

    // Act
    const cases = {
      'happy, 24 h': bound(stackDeadlineSec, true),
      'worst, 24 h': bound(stackDeadlineSec, false),
      'happy, 48 h': bound(MAX_DEADLINE_SEC, true),
      'worst, 48 h': bound(MAX_DEADLINE_SEC, false),
    };

    // Assess: the parent does not grow with the shards (a wave is one Map Run whatever its
    // size), nor with the deadline past 24 h (the pauses stretch with it).
    if (process.env.RCB_PRINT_BOUND) {
      for (const [name, b] of Object.entries(cases)) {
        process.stderr.write(
          `history bound, ${name}: parent ${b.checks} checks x ${b.loop} + ${b.rounds} batch rounds x ${b.laneLoop} + ${b.once} = ${b.parent} for 1..${maxShards} shards\n`,
        );
      }
      process.stderr.write(`each child: ${childHappy} (happy), ${child} (worst)\n`);
    }
    for (const b of Object.values(cases)) expect(b.parent).toBeLessThan(HISTORY_EVENT_LIMIT);
    // A 48 h run is checked about as often as a 24 h one (a few more checks while young).
    expect(cases['worst, 48 h'].checks).toBeLessThan(cases['worst, 24 h'].checks * 1.05);
    expect(cases['worst, 24 h'].checks).toBeLessThan(400);
    expect(cases['worst, 24 h'].rounds).toBeLessThan(150);
    expect(child).toBeLessThan(HISTORY_EVENT_LIMIT);
  });

  it('carries no list that grows with the sweep in a state payload (256 KiB limit)', () => {
    // The shards are read from S3 (ItemReader); the Map's own result is the ResultWriter's location.
    expect(JSON.stringify(definition)).not.toContain('$.plan.shards');
    expect(states[STATE_NAMES.evaluateShards].ResultPath).toBe('$.progress.waveRun');
    // Each wave's results are recorded in the bucket by the check after it; Aggregate reads them by execution.
    expect(JSON.stringify(states[STATE_NAMES.checkProgress].Parameters)).toContain('"previous.$":"$.progress"');
    expect(states[STATE_NAMES.aggregate].Parameters).toEqual({ 'runId.$': '$.runId', 'execution.$': '$$.Execution.Name' });
  });
});
