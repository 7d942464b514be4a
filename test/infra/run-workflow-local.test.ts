/**
 * Executes the synthesized run workflow with aws-local-stepfunctions, every Task state
 * bound by name to a local handler, as the local runner will. Pins the data flow between
 * states (what each phase receives) and the failure paths, which template assertions alone
 * cannot show.
 */
// Before the library: it calls Promise.withResolvers (Node 22), and the project runs on 20.
import '../../emulator/promise-polyfill';
import { StateMachine } from 'aws-local-stepfunctions';
import { STATE_NAMES } from '../../infra/orchestrator-construct';
import { runDistributedMap, withDistributedMapsAsTasks } from '../../emulator/distributed-map';
import { MemoryBlobStore } from '../cloud/memory-blob-store';
import { cloudKeys } from '../../core/cloud/storage-layout';
import { planWave, waveResultManifests, type WaveProgress } from '../../core/cloud/evaluation-waves';
import type { RunStore } from '../../core/store';
import type { CompletionRecord, TaskRecord } from '../../core/records';
import { sharedStack, stateMachineDefinition } from './helpers';

/** The execution's name (`$$.Execution.Name`): its waves and their results are kept under it. */
const EXECUTION = 'local';
const PINNED_TASK_DEFINITION = 'arn:aws:ecs:eu-west-1:123456789012:task-definition/shard:7';

/** An error as Step Functions sees it: matched by name in Retry/Catch. */
function stateError(name: string, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

type Handler = (input: any) => Promise<any>;

/**
 * The environment a shard task would get: a local handler bound to an ECS state receives
 * the rendered RunTask parameters, so the shard is read from its containerOverrides.
 */
function shardEnv(runTaskParameters: any): Record<string, string> {
  const [override] = runTaskParameters.Overrides.ContainerOverrides;
  return Object.fromEntries(override.Environment.map((e: { Name: string; Value: string }) => [e.Name, e.Value]));
}

/**
 * The two reads planWave makes while generation goes on: one task per shard's paper, settled
 * when the fake CheckProgress named the paper ready.
 */
function readinessStore(papers: () => string[], ready: Set<string>): RunStore {
  const task = (paper: string): TaskRecord => ({ taskId: `t-${paper}`, paper, file: 'f.py', snippet: 's', loc: 1, model: 'm', sample: 0 });
  const answer = (taskId: string): CompletionRecord => ({
    taskId,
    model: 'm',
    text: 'x',
    usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0 },
    costUsd: 0,
    finishReason: 'stop',
    latencyMs: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
  });
  const reads: Pick<RunStore, 'listTasks' | 'getCompletions'> = {
    listTasks: async () => papers().map(task),
    getCompletions: async (ids) => new Map(ids.filter((id) => ready.has(id.slice(2))).map((id) => [id, answer(id)] as const)),
  };
  return reads as RunStore;
}

/**
 * Runs the definition as the emulator does: the evaluation Distributed Map (which
 * aws-local-stepfunctions only validates) runs each item as a child execution of its
 * ItemProcessor, reading the wave CheckProgress wrote, and the execution is named EXECUTION.
 * The tests' PlanRun handlers return their shards as a list; this writes them to the run's
 * shard manifest and returns PlanRun's real output shape (manifest key and count, the run's
 * deadline, the pinned task definition) in their place. The tests' CheckProgress handlers
 * return generation's counts (and, optionally, `ready`: papers whose tasks are all settled
 * while generation goes on); this plans the waves with the real planWave, as CheckProgress
 * does (core/cloud/check-progress.ts): a wave of the ready shards, the rest once generation
 * is done, `done` only when every shard has been in a wave.
 */
function run(handlers: Partial<Record<string, Handler>>, input: Parameters<StateMachine['run']>[0], blobs = new MemoryBlobStore()) {
  const definition = stateMachineDefinition(sharedStack().template);
  const { states, maps } = withDistributedMapsAsTasks(definition.States);
  const retryIntervalOverrides = { [STATE_NAMES.evaluateShard]: 0, [STATE_NAMES.evaluateShardOnDemand]: 0, [STATE_NAMES.batchRound]: 0 };
  const bound: Record<string, Handler> = { ...(handlers as Record<string, Handler>) };
  let papers: string[] = [];
  const ready = new Set<string>();
  const planRun = handlers.PlanRun;
  if (planRun) {
    bound.PlanRun = async (planInput) => {
      const { shards = [], ...plan } = await planRun(planInput);
      papers = shards.map((s: { paper: string }) => s.paper);
      const key = cloudKeys.shardManifest(planInput.runId);
      await blobs.put(key, JSON.stringify(shards));
      return { deadlineSec: 86_400, taskDefinitionArn: PINNED_TASK_DEFINITION, shardManifestKey: key, shardCount: shards.length, ...plan };
    };
  }
  const checkProgress = handlers.CheckProgress;
  if (checkProgress) {
    bound.CheckProgress = async (checkInput: { runId: string; execution: string; previous: WaveProgress }) => {
      const { ready: readyNow = [], ...generation } = await checkProgress(checkInput);
      for (const paper of readyNow) ready.add(paper);
      const plan = await planWave(
        { store: readinessStore(() => papers, ready), blobs },
        { runId: checkInput.runId, execution: checkInput.execution, previous: checkInput.previous, generationDone: generation.done },
      );
      return {
        ...generation,
        done: generation.done && plan.undispatched === 0 && !plan.wave,
        waves: plan.waves,
        ...(plan.wave ? { wave: plan.wave } : {}),
      };
    };
  }
  for (const [name, map] of maps) {
    bound[name] = (mapInput) =>
      runDistributedMap({
        name,
        map,
        input: mapInput,
        executionName: EXECUTION,
        blobs,
        runChild: (processor, childInput) =>
          new StateMachine(processor as never, { validationOptions: { checkArn: false } }).run(childInput as never, {
            overrides: { taskResourceLocalHandlers: bound, retryIntervalOverrides },
          }).result,
      });
  }
  const machine = new StateMachine({ ...definition, States: states } as never, {
    validationOptions: { checkArn: false },
  });
  const execution = machine.run(input, {
    context: { Execution: { Name: EXECUTION } },
    overrides: {
      taskResourceLocalHandlers: bound,
      waitTimeOverrides: { [STATE_NAMES.waitForGeneration]: 0, [STATE_NAMES.waitForBatches]: 0 },
      retryIntervalOverrides,
    },
  });
  return execution.result;
}

describe('run workflow, executed locally', () => {
  it('plans, polls until generation is done, evaluates every shard with its run id, then aggregates', async () => {
    // Prepare
    const calls: string[] = [];
    const shards: Array<Record<string, string>> = [];
    const aggregated: unknown[] = [];
    const blobs = new MemoryBlobStore();
    let polls = 0;
    const handlers: Record<string, Handler> = {
      PlanRun: async (input) => {
        calls.push(`PlanRun:${input.runId}`);
        return { runId: input.runId, taskCount: 4, estimatedCostUsd: 0.5, shards: [{ paper: 'alpha' }, { paper: 'beta' }] };
      },
      CheckProgress: async (input) => {
        polls += 1;
        calls.push(`CheckProgress:${input.runId}`);
        return { done: polls >= 3, total: 4, settled: Math.min(4, polls + 1), failed: 0 };
      },
      EvaluateShard: async (input) => {
        calls.push('EvaluateShard');
        shards.push({ ...shardEnv(input), capacity: input.CapacityProviderStrategy[0].CapacityProvider });
        return {};
      },
      Aggregate: async (input) => {
        aggregated.push(input);
        return { runId: input.runId, status: 'succeeded', reportPrefix: `runs/${input.runId}/reports/` };
      },
      MarkRunFailed: async () => {
        throw new Error('MarkRunFailed must not run on the happy path');
      },
    };

    // Act
    const output = await run(handlers, { runId: 'run-1', spec: { samples: 1 } }, blobs);

    // Assess: three checks until generation is done, whose last writes every shard as one
    // wave; the wave is evaluated, and one more check (recording the wave's results) ends the loop.
    expect(calls).toEqual([
      'PlanRun:run-1',
      'CheckProgress:run-1',
      'CheckProgress:run-1',
      'CheckProgress:run-1',
      'EvaluateShard',
      'EvaluateShard',
      'CheckProgress:run-1',
    ]);
    expect(shards.sort((a, b) => a.RCB_SHARD.localeCompare(b.RCB_SHARD))).toEqual([
      { RCB_RUN_ID: 'run-1', RCB_SHARD: 'alpha', RCB_SHARD_REF: '{"paper":"alpha","tag":"alpha"}', capacity: 'FARGATE_SPOT' },
      { RCB_RUN_ID: 'run-1', RCB_SHARD: 'beta', RCB_SHARD_REF: '{"paper":"beta","tag":"beta"}', capacity: 'FARGATE_SPOT' },
    ]);
    expect(output).toMatchObject({
      runId: 'run-1',
      spec: { samples: 1 },
      plan: {
        runId: 'run-1',
        taskCount: 4,
        estimatedCostUsd: 0.5,
        shardManifestKey: cloudKeys.shardManifest('run-1'),
        shardCount: 2,
        taskDefinitionArn: PINNED_TASK_DEFINITION,
      },
      summary: { runId: 'run-1', status: 'succeeded', reportPrefix: 'runs/run-1/reports/' },
    });
    // The loop's state (its waves and their Map Runs) stays in the Generate Parallel, whose result is discarded.
    expect(Object.keys(output as object).sort()).toEqual(['plan', 'runId', 'spec', 'summary']);
    // Aggregate is told the execution, under which the check after the wave recorded its Map Run's results.
    expect(aggregated).toEqual([{ runId: 'run-1', execution: EXECUTION }]);
    const manifests = await waveResultManifests(blobs, 'run-1', EXECUTION);
    expect(manifests).toHaveLength(1);
    expect(JSON.parse((await blobs.get(manifests[0]!))!.toString('utf8'))).toMatchObject({ ResultFiles: { SUCCEEDED: [{}], FAILED: [] } });
  });

  it('evaluates a shard as soon as its tasks are settled, while generation goes on, each shard in one wave', async () => {
    // Prepare: alpha's tasks are settled at the first check, beta's only when generation is done.
    const calls: string[] = [];
    const aggregated: unknown[] = [];
    const blobs = new MemoryBlobStore();
    let polls = 0;
    const handlers: Record<string, Handler> = {
      PlanRun: async (input) => ({ runId: input.runId, taskCount: 2, estimatedCostUsd: 0, shards: [{ paper: 'alpha' }, { paper: 'beta' }] }),
      CheckProgress: async (input) => {
        polls += 1;
        calls.push(`CheckProgress:${input.previous.waves}`);
        return { done: polls >= 3, total: 2, settled: polls >= 3 ? 2 : 1, failed: 0, waitSec: 30, ready: polls === 1 ? ['alpha'] : [] };
      },
      EvaluateShard: async (input) => {
        calls.push(`EvaluateShard:${shardEnv(input).RCB_SHARD}`);
        return {};
      },
      Aggregate: async (input) => {
        aggregated.push(input);
        return { runId: input.runId, status: 'succeeded', reportPrefix: '' };
      },
      MarkRunFailed: async () => {
        throw new Error('MarkRunFailed must not run on the happy path');
      },
    };

    // Act
    await run(handlers, { runId: 'run-w', spec: {} }, blobs);

    // Assess: wave 1 (alpha) is evaluated before generation is done, wave 2 (beta) once it is.
    expect(calls).toEqual(['CheckProgress:0', 'EvaluateShard:alpha', 'CheckProgress:1', 'CheckProgress:1', 'EvaluateShard:beta', 'CheckProgress:2']);
    expect(aggregated).toEqual([{ runId: 'run-w', execution: EXECUTION }]);
    expect(await waveResultManifests(blobs, 'run-w', EXECUTION)).toHaveLength(2);
  });

  it('runs the batch lane beside the progress loop when PlanRun left it tasks, waiting while a batch is pending, then evaluates', async () => {
    // Prepare: two rounds see the batch pending, the third ingests it; CheckProgress sees every task settled after it.
    const calls: string[] = [];
    let rounds = 0;
    const handlers: Record<string, Handler> = {
      PlanRun: async (input) => ({ runId: input.runId, taskCount: 4, enqueued: 1, batchTasks: 3, estimatedCostUsd: 0.5, shards: [{ paper: 'alpha' }] }),
      BatchRound: async (input) => {
        rounds += 1;
        calls.push(`BatchRound:${input.runId}:${typeof input.startedAt}`);
        return { pendingBatches: rounds < 3 ? 1 : 0, open: rounds < 3 ? 3 : 0, settled: rounds < 3 ? 0 : 3, submitted: rounds === 1 ? 1 : 0, waitSec: 60 };
      },
      CheckProgress: async () => {
        calls.push('CheckProgress');
        return { done: rounds >= 3, total: 4, settled: rounds >= 3 ? 4 : 1, failed: 0, waitSec: 30 };
      },
      EvaluateShard: async () => {
        calls.push('EvaluateShard');
        return {};
      },
      Aggregate: async (input) => ({ runId: input.runId, status: 'succeeded', reportPrefix: '' }),
      MarkRunFailed: async () => {
        throw new Error('MarkRunFailed must not run on the happy path');
      },
    };

    // Act
    await run(handlers, { runId: 'run-b', spec: {} });

    // Assess
    expect(calls.filter((c) => c.startsWith('BatchRound'))).toEqual(Array(3).fill('BatchRound:run-b:string'));
    // Evaluation is last: after it only the check that records the wave's results and ends the loop.
    expect(calls.slice(calls.indexOf('EvaluateShard'))).toEqual(['EvaluateShard', 'CheckProgress']);
    expect(calls.indexOf('EvaluateShard')).toBeGreaterThan(calls.lastIndexOf('BatchRound:run-b:string'));
  });

  it('invokes no batch round for a plan without batch tasks (or one planned before the lane existed)', async () => {
    for (const plan of [{ batchTasks: 0 }, {}]) {
      let rounds = 0;
      await run(
        {
          PlanRun: async (input) => ({ runId: input.runId, taskCount: 1, estimatedCostUsd: 0, shards: [], ...plan }),
          BatchRound: async () => {
            rounds += 1;
            return { pendingBatches: 0, open: 0, settled: 0, submitted: 0, waitSec: 60 };
          },
          CheckProgress: async () => ({ done: true, total: 1, settled: 1, failed: 0, waitSec: 30 }),
          Aggregate: async (input) => ({ runId: input.runId, status: 'succeeded', reportPrefix: '' }),
        },
        { runId: 'run-n', spec: {} },
      );
      expect(rounds).toBe(0);
    }
  });

  it('marks the run failed when a batch round keeps failing (its retries spent), while the progress loop still waits', async () => {
    // Prepare
    const marked: unknown[] = [];
    let attempts = 0;
    const handlers: Record<string, Handler> = {
      PlanRun: async (input) => ({ runId: input.runId, taskCount: 2, batchTasks: 2, estimatedCostUsd: 0, shards: [{ paper: 'alpha' }] }),
      BatchRound: async () => {
        attempts += 1;
        throw stateError('ModelError', 'model fake-gpt: no API key: set OPENAI_API_KEY');
      },
      CheckProgress: async () => ({ done: false, total: 2, settled: 0, failed: 0, waitSec: 30 }),
      MarkRunFailed: async (input) => {
        marked.push(input);
        return null;
      },
    };

    // Act
    const result = run(handlers, { runId: 'run-f', spec: {} });

    // Assess: the first attempt and the lane's retries, then MarkRunFailed with the round's error.
    await expect(result).rejects.toMatchObject({ cause: { name: 'ModelError' } });
    expect(attempts).toBe(3);
    expect(marked).toEqual([{ runId: 'run-f', failure: { Error: 'ModelError', Cause: 'model fake-gpt: no API key: set OPENAI_API_KEY' } }]);
  });

  it('moves a shard Spot cannot place to on-demand Fargate after the capacity retries', async () => {
    // Prepare
    let spotAttempts = 0;
    const onDemand: string[] = [];
    const handlers: Record<string, Handler> = {
      PlanRun: async (input) => ({ runId: input.runId, taskCount: 1, estimatedCostUsd: 0, shards: [{ paper: 'alpha' }] }),
      CheckProgress: async () => ({ done: true, total: 1, settled: 1, failed: 0 }),
      EvaluateShard: async () => {
        spotAttempts += 1;
        throw stateError('AmazonECS.Unknown', 'RESOURCE:FARGATE capacity is unavailable');
      },
      EvaluateShardOnDemand: async (input) => {
        const env = shardEnv(input);
        onDemand.push(`${env.RCB_RUN_ID}/${env.RCB_SHARD}/${input.CapacityProviderStrategy[0].CapacityProvider}`);
        return {};
      },
      Aggregate: async (input) => ({ runId: input.runId, status: 'succeeded', reportPrefix: '' }),
    };

    // Act
    await run(handlers, { runId: 'run-2', spec: {} });

    // Assess: the first attempt plus four retries, then one on-demand run.
    expect(spotAttempts).toBe(5);
    expect(onDemand).toEqual(['run-2/alpha/FARGATE']);
  });

  it('marks the run failed with the original error when a phase fails, and fails the execution with it', async () => {
    // Prepare
    const marked: unknown[] = [];
    const handlers: Record<string, Handler> = {
      PlanRun: async (input) => ({ runId: input.runId, taskCount: 1, estimatedCostUsd: 0, shards: [{ paper: 'alpha' }] }),
      CheckProgress: async () => ({ done: true, total: 1, settled: 1, failed: 0 }),
      EvaluateShard: async () => ({}),
      Aggregate: async () => {
        throw stateError('ScoringError', 'no verdicts for task t1');
      },
      MarkRunFailed: async (input) => {
        marked.push(input);
        return null;
      },
    };

    // Act
    const result = run(handlers, { runId: 'run-3', spec: {} });

    // Assess
    await expect(result).rejects.toMatchObject({ cause: { name: 'ScoringError' } });
    expect(marked).toEqual([{ runId: 'run-3', failure: { Error: 'ScoringError', Cause: 'no verdicts for task t1' } }]);
  });

  it('still fails with the original error when MarkRunFailed itself fails', async () => {
    // Prepare
    const handlers: Record<string, Handler> = {
      PlanRun: async () => {
        throw stateError('BudgetExceeded', 'estimate $12.00 exceeds budget $10.00');
      },
      MarkRunFailed: async () => {
        throw stateError('StoreUnavailable', 'table not reachable');
      },
    };

    // Act
    const result = run(handlers, { runId: 'run-4', spec: {} });

    // Assess
    await expect(result).rejects.toMatchObject({ cause: { name: 'BudgetExceeded' } });
  });
});
