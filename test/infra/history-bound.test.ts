/**
 * The run workflow's execution history stays under Step Functions' 25,000-event limit in the
 * longest run it allows: generation that never finishes until the 24 h deadline (every
 * progress check taken) while, beside it, the batch lane polls a batch that never ends until
 * that deadline (every round with every retry),
 * then every shard of a 20-paper x 10-model sweep evaluated with every retry and the
 * on-demand fallback taken. Counted from the synthesized definition itself, so a change of
 * a loop, of a Retry or of a poll schedule moves the bound.
 */
import {
  BATCH_CANCEL_GRACE_SEC,
  DEFAULT_BATCH_POLL_SCHEDULE,
  pollCount,
  pollWaitSec,
  DEFAULT_POLL_SCHEDULE,
  HISTORY_EVENT_LIMIT,
} from '../../core/cloud/generation-polling';
import { STATE_NAMES } from '../../infra/state-names';
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

  it('holds fewer than 25,000 events in the longest run it allows', () => {
    // Prepare: the deployed deadline and schedule.
    const deadlineSec = Number(env('RCB_GENERATION_TIMEOUT_SEC'));
    const schedule = { minSec: Number(env('RCB_POLL_MIN_SEC')), maxSec: Number(env('RCB_POLL_MAX_SEC')) };
    const batchSchedule = { minSec: Number(env('RCB_BATCH_POLL_MIN_SEC')), maxSec: Number(env('RCB_BATCH_POLL_MAX_SEC')) };
    expect([deadlineSec, schedule, batchSchedule]).toEqual([24 * 3600, DEFAULT_POLL_SCHEDULE, DEFAULT_BATCH_POLL_SCHEDULE]);
    const shards = 20 * 10;

    // Act: the loop (CheckProgress, GenerationDone?, Wait) once per check; the Map, its
    // iterations (each Spot with every retry, then on-demand with every retry); the rest once.
    const checks = pollCount(deadlineSec, schedule);
    const loop = events(states[STATE_NAMES.checkProgress]) + events(states[STATE_NAMES.generationDone]) + events(states[STATE_NAMES.waitForGeneration]);
    const map = states[STATE_NAMES.evaluateShards];
    const inner = map.ItemProcessor.States as Record<string, State>;
    const perShard = 2 + events(inner[STATE_NAMES.evaluateShard]) + events(inner[STATE_NAMES.evaluateShardOnDemand]);
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
    const bound = checks * loop + lane + shards * perShard + once;

    // Assess: about 310 checks instead of 2,880 at a fixed 30 s, and about 100 batch rounds.
    if (process.env.RCB_PRINT_BOUND) {
      process.stderr.write(
        `history bound: ${checks} checks x ${loop} + ${rounds} batch rounds x ${laneLoop} + ${shards} shards x ${perShard} + ${once} = ${bound}; fixed 30 s: ${Math.ceil(deadlineSec / 30) + 1} checks x ${loop} = ${(Math.ceil(deadlineSec / 30) + 1) * loop}\n`,
      );
    }
    expect(checks).toBeLessThan(400);
    expect(rounds).toBeLessThan(150);
    expect(bound).toBeLessThan(HISTORY_EVENT_LIMIT);
  });
});
