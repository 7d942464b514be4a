/**
 * The run workflow's execution history stays under Step Functions' 25,000-event limit in the
 * longest run it allows: generation that never finishes until the 24 h deadline (every
 * progress check taken, every Lambda retry of each taken) while, beside it, the batch lane
 * polls a batch that never ends until that deadline (every round with every retry), then
 * the largest sweep the deployment admits (RCB_MAX_SHARDS shards) evaluated with every
 * retry and the on-demand fallback taken. Evaluation is a Distributed Map: each shard is a
 * child execution with its own history, and the parent's holds a Map Run's events whatever
 * the shard count; so the bound is two numbers, the parent's and one child's. Counted from
 * the synthesized definition itself, so a change of a loop, of a Retry, of a poll schedule
 * or of the Map's kind moves the bound.
 */
import {
  BATCH_CANCEL_GRACE_SEC,
  DEFAULT_BATCH_POLL_SCHEDULE,
  pollCount,
  pollWaitSec,
  DEFAULT_POLL_SCHEDULE,
  HISTORY_EVENT_LIMIT,
} from '../../core/cloud/generation-polling';
import { LAMBDA_TRANSIENT_ERRORS, MAP_MAX_CONCURRENCY, STATE_NAMES } from '../../infra/state-names';
import { MAX_SHARDS_DEFAULT } from '../../core/cloud/shard-plan';
import { allStates, sharedStack, stateMachineDefinition } from './helpers';

type State = Record<string, any>;

/** Events of one Task state that succeeds after every retry its Retry list allows. */
function worstTaskEvents(state: State): number {
  // Entered, Scheduled, Started, (Submitted for .sync), Succeeded, Exited.
  const sync = typeof state.Resource === 'string' && state.Resource.endsWith('.sync');
  const attempt = sync ? 4 : 3;
  const retries = ((state.Retry ?? []) as State[]).reduce((n, r) => n + (r.MaxAttempts ?? 3), 0);
  return 2 + attempt + retries * attempt;
}

function events(state: State): number {
  if (state.Type === 'Task') return worstTaskEvents(state);
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
    expect(map.ItemReader.Parameters['Key.$']).toBe('$.plan.shardManifestKey');
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

  it('holds fewer than 25,000 events in the longest run it allows, for the largest sweep it admits', () => {
    // Prepare: the deployed deadline, schedule and largest sweep.
    const deadlineSec = Number(env('RCB_GENERATION_TIMEOUT_SEC'));
    const schedule = { minSec: Number(env('RCB_POLL_MIN_SEC')), maxSec: Number(env('RCB_POLL_MAX_SEC')) };
    const batchSchedule = { minSec: Number(env('RCB_BATCH_POLL_MIN_SEC')), maxSec: Number(env('RCB_BATCH_POLL_MAX_SEC')) };
    expect([deadlineSec, schedule, batchSchedule]).toEqual([24 * 3600, DEFAULT_POLL_SCHEDULE, DEFAULT_BATCH_POLL_SCHEDULE]);
    const maxShards = Number(env('RCB_MAX_SHARDS'));
    expect(maxShards).toBe(MAX_SHARDS_DEFAULT);

    // Act: the loop (CheckProgress, GenerationDone?, Wait) once per check; the batch lane; the
    // Map Run's events (the same for 1 shard or maxShards); the rest once.
    const checks = pollCount(deadlineSec, schedule);
    const loop = events(states[STATE_NAMES.checkProgress]) + events(states[STATE_NAMES.generationDone]) + events(states[STATE_NAMES.waitForGeneration]);
    // The batch lane: a round (with every retry), its Choice and its Wait, until the deadline
    // (past which a round fails the run; it cancelled its batches BATCH_CANCEL_GRACE_SEC before).
    expect(BATCH_CANCEL_GRACE_SEC).toBeLessThan(deadlineSec);
    const rounds = pollCount(deadlineSec, batchSchedule);
    const laneLoop = events(states[STATE_NAMES.batchRound]) + events(states[STATE_NAMES.batchesPending]) + events(states[STATE_NAMES.waitForBatches]);
    const lane = rounds * laneLoop + events(states[STATE_NAMES.batchLane]) + events(states[STATE_NAMES.batchesDone]);
    const once =
      [STATE_NAMES.planRun, STATE_NAMES.generate, STATE_NAMES.lanesSettled, STATE_NAMES.aggregate, STATE_NAMES.succeeded].reduce(
        (n, s) => n + events(states[s]),
        2,
      ) + 4;
    const shardEvents = (_shards: number) => DISTRIBUTED_MAP_EVENTS;
    const parent = (shards: number) => checks * loop + lane + shardEvents(shards) + once;
    // One child: started and ended, Spot with every retry, on-demand with every retry, ShardFailed.
    const inner = states[STATE_NAMES.evaluateShards].ItemProcessor.States as Record<string, State>;
    const child = 2 + events(inner[STATE_NAMES.evaluateShard]) + events(inner[STATE_NAMES.evaluateShardOnDemand]) + events(inner[STATE_NAMES.shardFailed]);
    // What the old inline Map would have held for the same sweep: every shard in the parent.
    const inline = checks * loop + lane + once + maxShards * child;

    // Assess: about 310 checks instead of 2,880 at a fixed 30 s, and about 100 batch rounds.
    if (process.env.RCB_PRINT_BOUND) {
      process.stderr.write(
        `history bound, worst case: parent ${checks} checks x ${loop} + ${rounds} batch rounds x ${laneLoop} + Map Run ${DISTRIBUTED_MAP_EVENTS} + ${once} = ${parent(maxShards)} for 1..${maxShards} shards; each child ${child}; an inline Map of ${maxShards} shards would be ${inline}; fixed 30 s checks: ${(Math.ceil(deadlineSec / 30) + 1) * loop}\n`,
      );
    }
    expect(checks).toBeLessThan(400);
    expect(rounds).toBeLessThan(150);
    expect(parent(maxShards)).toBe(parent(1));
    expect(parent(maxShards)).toBeLessThan(HISTORY_EVENT_LIMIT);
    expect(child).toBeLessThan(HISTORY_EVENT_LIMIT);
  });

  it('carries no list that grows with the sweep in a state payload (256 KiB limit)', () => {
    // The shards are read from S3 (ItemReader); the Map's own result is the ResultWriter's location.
    expect(JSON.stringify(definition)).not.toContain('$.plan.shards');
    expect(states[STATE_NAMES.evaluateShards].ResultPath).toBe('$.evaluation');
    expect(JSON.stringify(states[STATE_NAMES.aggregate])).toContain('"mapResults.$":"$.evaluation.ResultWriterDetails"');
  });
});
