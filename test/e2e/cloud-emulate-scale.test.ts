/**
 * Issue 22 item 7: a synthetic sweep at full scale through the emulated cloud: 20 papers x
 * 40 replay models x 2 samples (a trivial pset generated here, one snippet a paper, so the
 * tests cost little), 800 shards in the evaluation Distributed Map, with faults injected:
 * one shard whose container fails every attempt (Spot and on-demand), throttled Lambda
 * invocations of PlanRun, CheckProgress and Aggregate, and a generation message that fails
 * every delivery until it is dead-lettered, and a new image deployed mid-run (a new task
 * definition revision registered while shards run). Evaluation is pipelined: the last model
 * answers only once a shard of the first has been evaluated. The run ends succeeded_with_errors
 * with only that shard's tasks infra_error, every other task judged and no model called twice
 * for a task; starting it again evaluates only the shards with unjudged tasks and finishes the
 * run. Also: a wave larger than the Map's MaxConcurrency runs exactly that many children at
 * once, the parent's history grows with its checks and waves, not its shards, and each paper's
 * environment is checked by one shard only.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelClient, ModelRequest } from '../../core/model';
import { replayModels } from '../../adapters/models/offline';
import { emulateCloudRun, type EmulatedRun } from '../../emulator/emulated-run';
import { cachedWorkflow } from '../../emulator/assembly-cache';
import { resolveRun } from '../../bin/commands/resolve-run';
import { readInfraErrors } from '../../core/cloud/aggregate-run';
import { STATE_NAMES } from '../../infra/state-names';
import { tempDir } from '../helpers/cli';

// The full size (20 x 40 x 2, 800 shards) runs with `npm run check:scale`, which prints what
// it measured (docs/cloud.md, Sweeps at scale); `npm test` runs the same faults on 4 x 5 x 2.
const FULL = !!process.env.RCB_SCALE_PAPERS;
const SIZE = { papers: Number(process.env.RCB_SCALE_PAPERS) || 4, models: Number(process.env.RCB_SCALE_MODELS) || 5 };
const PAPERS = Array.from({ length: SIZE.papers }, (_, i) => `p${String(i).padStart(2, '0')}`);
const MODELS = Array.from({ length: SIZE.models }, (_, i) => `m${String(i).padStart(2, '0')}`);
const SAMPLES = 2;
const FAILING = { paper: PAPERS[Math.min(7, PAPERS.length - 1)], model: MODELS[Math.min(13, MODELS.length - 1)] };
const THROTTLES = { [STATE_NAMES.planRun]: 3, [STATE_NAMES.checkProgress]: 5, [STATE_NAMES.aggregate]: 2 };

/** A pset of PAPERS, each one annotated file with one snippet and a unittest that checks it. */
function writePset(root: string): void {
  const yaml = PAPERS.map(
    (id) => `- id: ${id}\n  title: Paper ${id}\n  first_commit_date: 2024-03-15\n  annotated_file_paths: model.py\n  context_file_paths: utils.py\n`,
  ).join('');
  writeFileSync(join(root, 'papers.yaml'), yaml);
  for (const id of PAPERS) {
    mkdirSync(join(root, id), { recursive: true });
    writeFileSync(join(root, id, 'paper2code_paper.tex'), `\\section{${id}}\nWe double.\n`);
    writeFileSync(join(root, id, 'model.py'), 'def f(x):\n    # <paper2code name="double">\n    b = x * 2\n    # </paper2code name="double">\n    return b\n');
    writeFileSync(join(root, id, 'utils.py'), 'def helper():\n    return 1\n');
    writeFileSync(
      join(root, id, 'paper2code_test.py'),
      'import unittest\nimport model\n\n\nclass T(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(model.f(3), 6)\n\n\nif __name__ == "__main__":\n    unittest.main()\n',
    );
  }
}

/** One replay file answering every paper, model and sample right. */
function writeReplay(path: string): void {
  const lines: string[] = [];
  for (const model of MODELS)
    for (const paper of PAPERS)
      for (let sample = 0; sample < SAMPLES; sample++)
        lines.push(JSON.stringify({ paper, snippet: 'double', model, sample, completion: '```python\n    b = x * 2\n```\n' }));
  writeFileSync(path, `${lines.join('\n')}\n`);
}

const calls = new Map<string, number>();
/** Generations and shard evaluations of the first execution, in the order they ended. */
const order: string[] = [];
const LAST_MODEL = MODELS[MODELS.length - 1];
let openGate: () => void = () => undefined;
/** The last model answers only once a shard of the first model has been evaluated: under a barrier, it never would. */
const gate = new Promise<void>((resolve) => {
  openGate = resolve;
});
let first: EmulatedRun;
let second: EmulatedRun;
let poisoned: string;
// What the first execution left, read before the second one aggregates again (and clears it).
let firstInfra: Awaited<ReturnType<typeof readInfraErrors>>;
let firstStatus: string | undefined;
/** The Distributed Map's MaxConcurrency in the synthesized definition. */
let maxConcurrency: number;
/** Wall times (ms) of the first execution and of the second, for the report. */
const wall = { setup: 0, first: 0, second: 0 };

beforeAll(async () => {
  const setup = Date.now();
  const dir = tempDir('rcb-scale-');
  const psetDir = join(dir, 'pset');
  mkdirSync(psetDir);
  writePset(psetDir);
  const replay = join(dir, 'sweep.jsonl');
  writeReplay(replay);
  // Each model call counted by task (paper, model, sample): a task paid twice would show 2.
  const clients = new Map<string, ModelClient>(
    replayModels(replay).map((m) => [
      m.id,
      Object.assign(Object.create(m) as ModelClient, {
        complete: async (req: ModelRequest) => {
          const key = `${req.task.paper}/${m.id}/${req.sample}`;
          calls.set(key, (calls.get(key) ?? 0) + 1);
          if (m.id === LAST_MODEL) await gate;
          const answer = await m.complete(req);
          order.push(`generated ${m.id}`);
          return answer;
        },
      }),
    ]),
  );
  const resolved = resolveRun({ pset: psetDir, model: [`replay:${replay}`], samples: String(SAMPLES), timeout: '30', paper: true }, null);
  const request = { pset: resolved.pset, templateText: resolved.template.text, spec: resolved.spec, models: resolved.models.info };
  let poison = '';
  // The stack as the other emulated-cloud tests synthesize it (kept by assembly-cache.ts).
  const { workflow } = await cachedWorkflow({ bundle: true });
  maxConcurrency = Number(findState(workflow.definition.States, STATE_NAMES.evaluateShards)?.MaxConcurrency);
  const started = Date.now();
  wall.setup = started - setup;
  first = await emulateCloudRun(
    request,
    {
      workflow,
      functions: 'source',
      clients,
      python: process.env.RCB_PYTHON || '/usr/bin/python3',
      jobs: 1,
      unsafeNoSandbox: true,
      onShardExit: (outcome) => {
        const model = (JSON.parse(outcome.shardRef ?? '{}') as { model?: string }).model;
        order.push(`evaluated ${model}`);
        if (model === MODELS[0] && outcome.code === 0) openGate();
      },
    },
    {
      // A new image deployed while the first shards run: the run keeps the revision it pinned.
      deployImageAfterShards: 3,
      failShard: (paper, ref) => paper === FAILING.paper && JSON.parse(ref ?? '{}').model === FAILING.model,
      throttle: THROTTLES,
      poisonTask: (taskId) => {
        // The first task delivered becomes the poisoned one, for this execution.
        poison ||= taskId;
        return taskId === poison;
      },
    },
  );
  wall.first = Date.now() - started;
  poisoned = poison;
  firstInfra = await readInfraErrors(first.blobs, first.runId);
  firstStatus = (await first.store.getRun(first.runId))?.status;
  const again = Date.now();
  second = await first.runAgain({});
  wall.second = Date.now() - again;
  if (FULL) process.stderr.write(report());
}, 3_600_000);

afterAll(async () => {
  const closing = Date.now();
  await first?.close();
  if (FULL) process.stderr.write(`servers stopped and scratch removed in ${((Date.now() - closing) / 1000).toFixed(0)} s\n`);
});

/** A state of the definition by name, in a Parallel's branches too. */
function findState(states: Record<string, Record<string, unknown>>, name: string): Record<string, unknown> | undefined {
  for (const [key, state] of Object.entries(states)) {
    if (key === name) return state;
    for (const branch of (state.Branches as Array<{ States: Record<string, Record<string, unknown>> }> | undefined) ?? []) {
      const found = findState(branch.States, name);
      if (found) return found;
    }
  }
  return undefined;
}

/** What `npm run check:scale` prints: the sweep's size, times and shape (not asserted on: times are the machine's). */
function report(): string {
  const runs = first.shardRuns;
  const firstRuns = runs.slice(0, runs.length - second.mapRuns.reduce((n, r) => n + r.items, 0));
  const durations = firstRuns.map((r) => r.endedAt - r.startedAt).sort((a, b) => a - b);
  const median = durations[Math.floor(durations.length / 2)] ?? 0;
  const lines = [
    `scale sweep: ${SIZE.papers} papers x ${SIZE.models} models x ${SAMPLES} samples, ${PAPERS.length * MODELS.length} shards (set-up ${(wall.setup / 1000).toFixed(0)} s)`,
    `first execution: ${(wall.first / 1000).toFixed(0)} s, ${first.mapRuns.length} waves (Map Runs) of ${first.mapRuns.map((r) => r.items).join(', ')} shards, peak ${Math.max(...first.mapRuns.map((r) => r.peakConcurrency))} of MaxConcurrency ${maxConcurrency}`,
    `  ${runs.length} container runs in all, median ${median} ms each; ${first.mapRuns.reduce((n, r) => n + r.failed, 0)} child failed; throttled ${JSON.stringify(first.throttled)}; dead-lettered ${first.lanes.deadLettered.length}`,
    `  parent history: ${first.history.events} events, ${first.history.entered[STATE_NAMES.checkProgress]} checks, ${first.history.entered[STATE_NAMES.evaluateShards]} EvaluateShards`,
    `second execution: ${(wall.second / 1000).toFixed(0)} s, ${second.mapRuns.reduce((n, r) => n + r.items, 0)} shards evaluated again`,
    `model calls: ${calls.size} tasks, ${[...calls.values()].filter((n) => n > 1).length} called more than once`,
  ];
  return `${lines.join('\n')}\n`;
}

describe(`a ${SIZE.papers}-paper x ${SIZE.models}-model x ${SAMPLES}-sample sweep in the emulated cloud, with faults`, () => {
  it('evaluates every shard exactly once, in waves of Map Runs (each shard its own child execution), one failing, within MaxConcurrency', () => {
    const shards = first.mapRuns.flatMap((r) => r.values as Array<{ paper: string; model: string }>).map((s) => `${s.paper}/${s.model}`);
    expect(shards).toHaveLength(PAPERS.length * MODELS.length);
    expect(new Set(shards).size).toBe(shards.length);
    expect(first.mapRuns.length).toBeGreaterThan(1);
    expect(first.mapRuns.reduce((n, r) => n + r.failed, 0)).toBe(1);
    expect(maxConcurrency).toBeGreaterThan(0);
    for (const r of first.mapRuns) expect(r.peakConcurrency).toBeLessThanOrEqual(maxConcurrency);
    // A wave of more shards than MaxConcurrency ran that many children at once: the limit was reached, not only respected.
    const large = first.mapRuns.filter((r) => r.items > maxConcurrency);
    if (FULL) expect(large.length).toBeGreaterThan(0);
    for (const r of large) expect(r.peakConcurrency).toBe(maxConcurrency);
  });

  it("keeps the parent's history to its checks, not its shards: one EvaluateShards per wave, no state more often than CheckProgress", () => {
    const { entered, events } = first.history;
    const checks = entered[STATE_NAMES.checkProgress];
    expect(checks).toBeGreaterThan(0);
    // A Map Run is one state of the parent whatever its size: its children have histories of their own.
    expect(entered[STATE_NAMES.evaluateShards]).toBe(first.mapRuns.length);
    for (const [state, n] of Object.entries(entered)) expect([state, n <= checks + 1]).toEqual([state, true]);
    // So its length is at most two events per state and check, plus a failure and a retry per throttle.
    const throttles = Object.values(first.throttled).reduce((a, b) => a + b, 0);
    expect(events).toBeLessThanOrEqual(2 * Object.keys(entered).length * (checks + 1) + 2 * throttles + 2);
  });

  it("checks each paper's environment once in the image: one shard runs its oracle, every other shard reads the stored check", () => {
    const ran = first.shardRuns.filter((r) => r.evaluated?.environment?.ran).map((r) => r.paper);
    expect(ran.sort()).toEqual([...PAPERS].sort());
    const judged = first.shardRuns.filter((r) => r.evaluated);
    expect(judged.every((r) => r.evaluated?.environment?.runs === true)).toBe(true);
  });

  it("pipelines: the first model's shards are evaluated before the last model's generations finish", () => {
    const firstEvaluated = order.indexOf(`evaluated ${MODELS[0]}`);
    const lastGenerated = order.lastIndexOf(`generated ${LAST_MODEL}`);
    expect(firstEvaluated).toBeGreaterThanOrEqual(0);
    expect(firstEvaluated).toBeLessThan(lastGenerated);
    // No shard of the last model ran before its generations were all settled.
    const firstOfLast = order.indexOf(`evaluated ${LAST_MODEL}`);
    expect(firstOfLast).toBeGreaterThan(order.indexOf(`generated ${LAST_MODEL}`));
  });

  it('a new image deployed mid-run: every shard of the run, and of its re-run, uses the revision PlanRun pinned', () => {
    expect(first.evaluator.revisions.map((r) => r.taskDefinitionArn.split(':').at(-1))).toEqual(['1', '2']);
    expect(first.evaluator.deployed.taskDefinitionArn).toMatch(/rcb-evaluation:2$/);
    const used = new Set(second.shardRuns.map((r) => r.taskDefinition));
    expect([...used]).toEqual([first.evaluator.revisions[0].taskDefinitionArn]);
    expect(second.shardRuns.length).toBeGreaterThan(first.mapRuns.reduce((n, r) => n + r.items, 0));
  });

  it('absorbs the throttled Lambda invocations with the Retry every Lambda state carries', () => {
    expect(first.throttled).toEqual(THROTTLES);
  });

  it('dead-letters the message that fails every delivery', () => {
    // The lane keeps the dead-lettered message bodies.
    expect(first.lanes.deadLettered.map((body) => (JSON.parse(body) as { taskId: string }).taskId)).toContain(poisoned);
  });

  it('ends succeeded_with_errors: the failed shard tasks infra_error, every other task judged', async () => {
    expect([first.succeeded, first.error]).toEqual([true, undefined]);
    expect(first.output).toMatchObject({ summary: { status: 'succeeded_with_errors', infraErrorTasks: SAMPLES } });
    const infra = firstInfra;
    expect(infra?.shards.map((s) => s.shard)).toEqual([FAILING]);
    expect(infra?.shards[0].error).toBe('States.TaskFailed');
    const tasks = await first.store.listTasks(first.runId);
    expect(tasks).toHaveLength(PAPERS.length * MODELS.length * SAMPLES);
    const infraIds = new Set(infra!.shards[0].taskIds);
    expect(tasks.filter((t) => infraIds.has(t.taskId)).every((t) => t.paper === FAILING.paper && t.model === FAILING.model)).toBe(true);
    expect(firstStatus).toBe('succeeded_with_errors');
  });

  it('started again, evaluates only the shards with unjudged tasks and finishes: every task judged and passing, no task paid twice', async () => {
    expect([second.succeeded, second.execution.name]).toEqual([true, `${first.runId}-2`]);
    expect(second.output).toMatchObject({ summary: { status: 'succeeded' } });
    // The failed shard and the dead-lettered task's shard (its verdict was reopened with its answer).
    expect(second.mapRuns.reduce((n, r) => n + r.items, 0)).toBeLessThanOrEqual(2);
    expect(second.mapRuns.reduce((n, r) => n + r.failed, 0)).toBe(0);
    const tasks = await second.store.listTasks(second.runId);
    const verdicts = await second.store.listVerdicts(second.runId);
    expect(verdicts).toHaveLength(tasks.length);
    expect(verdicts.every((v) => v.strictPass)).toBe(true);
    expect(await readInfraErrors(second.blobs, second.runId)).toMatchObject({ shards: [], tasks: 0 });
    expect(calls.size).toBe(tasks.length);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
  });
});
