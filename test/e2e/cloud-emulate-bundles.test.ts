/**
 * What is deployed, run here: every Lambda bundle of the synthesized cloud assembly, staged
 * in a folder that holds only that bundle (as /var/task), loads and answers in its own
 * process; and `rcb cloud run --emulate` with a hosted model (a local OpenAI-compatible
 * endpoint, reached through a `--models-file` entry that the bundles carry, behind a proxy
 * that fails a third of the calls) gives the scores of a local run and buys every answer once.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { cloudKeys } from '../../core/cloud/payloads';
import { loadTemplate } from '../../core/prompt/template';
import { BUNDLED_RESOURCES, DEPLOYED_MODELS_FILE } from '../../core/cloud/bundle-resources';
import { CONTEXT_KEYS } from '../../infra/config';
import { synthesizeWorkflow, type CfnTemplate, type SynthesizedWorkflow } from '../../emulator/workflow-definition';
import { emulateCloudRun } from '../../emulator/emulated-run';
import { cachedWorkflow } from '../../emulator/assembly-cache';
import { resolveRun } from '../../bin/commands/resolve-run';
import { hostedModels } from '../../app/models';
import { deployedFunctions, FunctionProcesses, type DeployedFunction } from '../../emulator/deployed-functions';
import { FakeChatEndpoint, promptKey } from '../reliability/fake-chat-endpoint';
import { CLAIM_LEASE_MARGIN_MS } from '../../app/stages/generate';
import { PSET_MINI, REPO, rcbAsync, tempDir } from '../helpers/cli';
import { fakeModelsYaml } from '../helpers/fake-models-file';
import { boundAfter, timed } from '../helpers/machine-speed';
import { expectCloudBoardLikeLocal } from '../helpers/cost-lines';

const KEY_ENV = 'RCB_BUNDLE_TEST_KEY';

/**
 * In front of the endpoint: every third request is answered 500 without reaching it (nothing
 * billed), and a request whose body contains `hang` is never answered (a call that outlives
 * the generator's timeout).
 */
class FlakyProxy {
  private readonly server: Server;
  requests = 0;
  failed = 0;
  hung = 0;
  hang?: string;
  /** Every n-th request fails (0: none). */
  failEvery = 3;
  url = '';
  constructor(target: () => string) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        if (this.hang && body.toString().includes(this.hang)) return void this.hung++;
        const n = ++this.requests;
        if (this.failEvery && n % this.failEvery === 0) {
          this.failed++;
          res.writeHead(500, { 'content-type': 'application/json' });
          return void res.end(JSON.stringify({ error: { message: 'injected failure', type: 'server_error' } }));
        }
        const to = new URL(target());
        const forward = httpRequest(
          {
            host: to.hostname,
            port: to.port,
            path: to.pathname.replace(/\/v1$/, '') + (req.url ?? ''),
            method: req.method,
            headers: { ...req.headers, connection: 'close' },
            // A connection of its own per request: node's global agent keeps sockets alive, and one
            // the endpoint closes as it is reused resets the forward, a failure nobody injected
            // that the client sees as a dropped connection and retries fewer times than a 500.
            agent: false,
          },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          },
        );
        forward.on('error', () => res.destroy());
        forward.end(body);
      });
    });
  }
  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The environment a deployed function reads, for calls that use none of its values (an event no handler accepts, an empty batch). */
const STANDALONE_ENV = {
  RCB_TABLE: 't',
  RCB_BUCKET: 'b',
  RCB_KEYS_SECRET_ARN: 'arn:s',
  RCB_LANE_QUEUES: '{"openai":"http://127.0.0.1:9/q"}',
  RCB_EVALUATION_READY: 'true',
  RCB_GENERATION_TIMEOUT_SEC: '60',
  // PlanRun pins the evaluator its template names (read with its configuration, before the event).
  RCB_TASK_DEFINITION: 'arn:aws:ecs:us-east-1:000000000000:task-definition/rcb-evaluator:1',
  RCB_EVALUATION_IMAGE: `000000000000.dkr.ecr.us-east-1.amazonaws.com/rcb@sha256:${'0'.repeat(64)}`,
  AWS_REGION: 'us-east-1',
};

/** The shortest and longest generator timeouts the stack admits (rcb:generatorTimeoutSec), s. */
const MIN_GENERATOR_TIMEOUT_SEC = 10;
const MAX_GENERATOR_TIMEOUT_SEC = 900;

/**
 * A generator timeout that holds on this machine now: at least the stack's minimum, and
 * LOAD_SLACK times what a generator instance of the deployed bundle takes to start and
 * answer an empty batch (a machine slowed k times slows that k times too).
 */
async function generatorTimeoutFor(deployed: DeployedFunction[]): Promise<number> {
  const fn = deployed.find((f) => /^GenerationGeneratorFunction/.test(f.logicalId))!;
  const processes = new FunctionProcesses({ fn, root: join(work, 'reference'), env: STANDALONE_ENV });
  try {
    const reference = await timed(() => processes.invoke({ Records: [] }));
    return Math.min(MAX_GENERATOR_TIMEOUT_SEC, Math.max(MIN_GENERATOR_TIMEOUT_SEC, Math.ceil(boundAfter(0, reference.ms) / 1000)));
  } finally {
    await processes.close();
  }
}

/** Batch sizes of the generator's lane event source mappings (queues with a redrive policy), deduplicated. */
function laneBatchSizes(template: CfnTemplate): number[] {
  const queueOf = (r: CfnTemplate['Resources'][string]) => (r.Properties?.EventSourceArn as { 'Fn::GetAtt'?: string[] } | undefined)?.['Fn::GetAtt']?.[0] ?? '';
  const sizes = Object.values(template.Resources)
    .filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping' && template.Resources[queueOf(r)]?.Properties?.RedrivePolicy)
    .map((r) => Number(r.Properties?.BatchSize ?? 10));
  return [...new Set(sizes)];
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = rcbAsync(args, { env });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

const pset = loadPset(PSET_MINI);
const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
const endpoint = new FakeChatEndpoint(pset, template, true);
const proxy = new FlakyProxy(() => endpoint.url);
const work = tempDir('rcb-bundles-');
const modelsFile = join(work, 'models.yaml');
let workflow: SynthesizedWorkflow;
let functions: DeployedFunction[];

beforeAll(async () => {
  await endpoint.start();
  await proxy.start();
  writeFileSync(modelsFile, fakeModelsYaml(proxy.url, KEY_ENV));
  // The assembly `rcb cloud run --emulate --models-file` below reads too (emulator/assembly-cache.ts).
  workflow = (await cachedWorkflow({ bundle: true, context: { [CONTEXT_KEYS.modelsFile]: modelsFile } })).workflow;
  functions = deployedFunctions(workflow.deployment!.template, workflow.deployment!.assemblyDir);
}, 900_000);

afterAll(async () => {
  await proxy.close();
  await endpoint.close();
});

describe('the deployed Lambda bundles', () => {
  it('are one file each with the resources they read beside it, the deployment models file where models are priced or called', () => {
    // Assess
    expect(functions.map((f) => f.logicalId).sort()).toEqual([
      expect.stringMatching(/^GenerationBatchRoundFunction/),
      expect.stringMatching(/^GenerationDeadLetterFunction/),
      expect.stringMatching(/^GenerationGeneratorFunction/),
      expect.stringMatching(/^OrchestratorAggregateFunction/),
      expect.stringMatching(/^OrchestratorCheckProgressFunction/),
      expect.stringMatching(/^OrchestratorMarkRunFailedFunction/),
      expect.stringMatching(/^OrchestratorPlanRunFunction/),
    ]);
    for (const fn of functions) {
      const carriesModels = /^(GenerationGenerator|GenerationBatchRound|OrchestratorPlanRun)Function/.test(fn.logicalId);
      expect([fn.logicalId, readdirSync(fn.assetDir).sort()]).toEqual([fn.logicalId, ['index.js', 'index.js.map', 'resources']]);
      expect([fn.logicalId, readdirSync(join(fn.assetDir, 'resources')).sort()]).toEqual([
        fn.logicalId,
        [...BUNDLED_RESOURCES, ...(carriesModels ? [DEPLOYED_MODELS_FILE] : [])].sort(),
      ]);
      expect(readFileSync(join(fn.assetDir, 'resources', 'models.yaml'), 'utf8')).toBe(readFileSync(join(REPO, 'resources', 'models.yaml'), 'utf8'));
    }
  });

  it('each load and answer from a folder that holds only the bundle, with the template environment and nothing of the checkout', async () => {
    // Prepare: the environment a deployed function reads (STANDALONE_ENV).
    for (const fn of functions) {
      const root = join(work, 'staged', fn.logicalId);
      const processes = new FunctionProcesses({ fn, root, env: STANDALONE_ENV });
      try {
        // Act: an event no handler accepts (the SQS consumers: an empty batch, which they answer).
        const sqsConsumer = /^Generation(Generator|DeadLetter)/.test(fn.logicalId);
        const outcome = await processes.invoke(sqsConsumer ? { Records: [] } : { not: 'a payload' }).then(
          (result) => ({ result }),
          (error: Error) => ({ error: error.name }),
        );

        // Assess: the module loaded alone (no Runtime.ExitError / module not found) and the handler itself answered.
        expect([fn.logicalId, readdirSync(processes.taskRoot).sort()]).toEqual([fn.logicalId, ['index.js', 'index.js.map', 'resources']]);
        expect([fn.logicalId, outcome]).toEqual([fn.logicalId, sqsConsumer ? { result: { batchItemFailures: [] } } : { error: 'PayloadError' }]);
        expect(existsSync(join(processes.taskRoot, 'node_modules'))).toBe(false);
      } finally {
        await processes.close();
      }
    }
  }, 900_000);
});

describe('rcb cloud run --emulate with a hosted model', () => {
  it('prices and calls it from the bundles, scores as a local run does, and pays for every task once though a third of the calls fail', async () => {
    // Prepare: the local run of the same flags, through the same flaky proxy.
    const common = ['--model', 'fake', '--budget', '100', '--models-file', modelsFile, '--python', '/usr/bin/python3'];
    const env = { [KEY_ENV]: 'fake-key', RCB_CACHE_DIR: join(work, 'cache') };
    const local = await run(['run', ...common, '--out', join(work, 'local')], env);
    expect([local.status, local.stderr.slice(-1500)]).toEqual([0, expect.any(String)]);
    const localCalls = endpoint.reset();
    const failedBefore = proxy.failed;

    // Act
    const cloud = await run(['cloud', 'run', '--emulate', '--state-dir', join(work, 'emulator'), ...common, '--out', join(work, 'cloud')], env);

    // Assess
    expect([cloud.status, cloud.stderr.slice(-1500)]).toEqual([0, expect.any(String)]);
    const calls = endpoint.reset();
    const prompts = pset.papers.flatMap((p) => p.snippets.map((s) => promptKey(p.meta.id, s.file, s.name)));
    expect(Object.fromEntries(calls.answered)).toEqual(Object.fromEntries(prompts.map((k) => [k, 1])));
    expect(Object.fromEntries(localCalls.answered)).toEqual(Object.fromEntries(prompts.map((k) => [k, 1])));
    expect(proxy.failed - failedBefore).toBeGreaterThanOrEqual(Math.floor(prompts.length / 3) - 1);
    expect(endpoint.unknownPrompts).toBe(0);
    expect(cloud.stdout.startsWith('\n')).toBe(true);
    expectCloudBoardLikeLocal(cloud.stdout.slice(1), readFileSync(join(work, 'local', 'leaderboard.txt'), 'utf8'));
    expect(JSON.parse(readFileSync(join(work, 'cloud', 'overall_stats.json'), 'utf8'))).toEqual(
      JSON.parse(readFileSync(join(work, 'local', 'overall_stats.json'), 'utf8')),
    );
  }, 900_000);
});

describe('a generation message dead-lettered in the emulated cloud', () => {
  it('settles its task as a failed completion, so the run goes on to evaluation and succeeds instead of waiting for its deadline; started again, the run asks for that task only, once', async () => {
    // Prepare: one prompt is never answered; the generator times out on each delivery.
    const paper = pset.papers[0];
    const stuck = paper.snippets[0];
    proxy.hang = `Implement block \\"${stuck.name}\\"`;
    // No injected failures here: their retries, on a loaded machine, could outlast the short timeout too.
    proxy.failEvery = 0;
    const hung = proxy.hung;
    const hosted = hostedModels(modelsFile);
    const resolved = resolveRun({ model: ['fake'], samples: '1', paper: true, papers: paper.meta.id, timeout: '60', budget: '100' }, hosted);
    // The generator's timeout is short, so that the hanging call is stopped soon, but its
    // batch-mates on the lane must still be answered within it: on a loaded machine a normal
    // generation takes many times its quiet time, and one that outlives the timeout is killed
    // with its claim held, failed again on each redelivery and dead-lettered too. So the
    // timeout is a multiple of a reference measured here, just before (test/helpers/machine-speed.ts):
    // a generator instance of the deployed bundle started and answering an empty batch.
    const timeoutSec = await generatorTimeoutFor(functions);
    const short = await synthesizeWorkflow({
      bundle: true,
      outdir: join(work, 'cdk.out-short'),
      context: { [CONTEXT_KEYS.modelsFile]: modelsFile, [CONTEXT_KEYS.generatorTimeoutSec]: timeoutSec },
    });
    // Each message has an invocation of its own (the lanes' batch size is 1): the hanging call
    // shares its invocation's time with no other message.
    expect(laneBatchSizes(short.deployment!.template)).toEqual([1]);

    // Act
    const run = await emulateCloudRun(
      { pset: resolved.pset, templateText: resolved.template.text, spec: resolved.spec, models: resolved.models.info },
      { workflow: short, modelsFile, keys: { [KEY_ENV]: 'fake-key' }, python: '/usr/bin/python3' },
    );
    const firstEnded = Date.now();
    try {
      // Assess
      expect([run.succeeded, run.error]).toEqual([true, undefined]);
      expect(proxy.hung - hung).toBeGreaterThanOrEqual(1);
      expect(run.lanes.deadLettered).toHaveLength(1);
      const tasks = await run.store.listTasks(run.runId);
      const stuckTask = tasks.find((t) => t.snippet === stuck.name)!;
      const completions = await run.store.getCompletions(tasks.map((t) => t.taskId));
      expect(completions.get(stuckTask.taskId)?.error?.kind).toBe('dead_lettered');
      expect([...completions.values()].filter((c) => c.error)).toHaveLength(1);
      const verdicts = await run.store.listVerdicts(run.runId);
      expect(verdicts).toHaveLength(tasks.length);
      expect(verdicts.find((v) => v.taskId === stuckTask.taskId)?.failureClass).toBe('generation_error');
      expect((await run.store.getRun(run.runId))?.status).toBe('succeeded');

      // Act: the endpoint answers it now, and the run is started again (rcb cloud run of the same run id).
      proxy.hang = undefined;
      // The generator the runtime killed at its timeout left its generation claim, whose lease
      // is its remaining time plus a margin; SQS's visibility timeout outlasts that lease, the
      // emulated lanes' does not wait in time: the restart comes once the lease has run out.
      // Every claim was taken before the first execution ended, with a lease of at most the
      // generator's timeout plus the margin.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, firstEnded + timeoutSec * 1000 + CLAIM_LEASE_MARGIN_MS + 1_000 - Date.now())));
      const judgedBefore = new Map(verdicts.map((v) => [v.taskId, v.createdAt]));
      endpoint.reset();
      const again = await run.runAgain();

      // Assess: a new attempt, because the run had a failed task under its cap; only that task
      // is asked again (paid once), answered as its second attempt, and judged; nothing else is
      // called or tested again.
      expect([again.succeeded, again.error, again.execution]).toEqual([
        true,
        undefined,
        { name: `${run.runId}-2`, attempt: 2, started: true, earlier: ['SUCCEEDED'] },
      ]);
      const calls = endpoint.reset();
      expect(Object.fromEntries(calls.answered)).toEqual({ [promptKey(paper.meta.id, stuck.file, stuck.name)]: 1 });
      const after = await again.store.getCompletions(tasks.map((t) => t.taskId));
      expect(after.get(stuckTask.taskId)).toMatchObject({ attempt: 2 });
      expect(after.get(stuckTask.taskId)?.error).toBeUndefined();
      expect([...after.values()].filter((c) => c.error)).toEqual([]);
      const verdictsAfter = await again.store.listVerdicts(again.runId);
      expect(verdictsAfter).toHaveLength(tasks.length);
      expect(verdictsAfter.find((v) => v.taskId === stuckTask.taskId)?.failureClass).not.toBe('generation_error');
      for (const v of verdictsAfter) if (v.taskId !== stuckTask.taskId) expect([v.taskId, v.createdAt]).toEqual([v.taskId, judgedBefore.get(v.taskId)]);
      expect((await again.store.getRun(again.runId))?.status).toBe('succeeded');
      expect(await again.counters?.getCounts(again.runId)).toEqual({ total: tasks.length, settled: tasks.length, failed: 0, judged: tasks.length });
    } finally {
      proxy.hang = undefined;
      proxy.failEvery = 3;
      await run.close();
    }
  }, 900_000);
});

describe('a run with a shard that failed every attempt, started again', () => {
  it('resumes under the same run id: no model call and no test is repeated, and the run succeeds, on the revision it pinned though a new image was deployed mid-run', async () => {
    // Prepare: every container run of one shard stops, after all answers are bought: that shard
    // fails alone (issue 22), its tasks infra_error, and the run ends succeeded_with_errors.
    // After the first shard run a new image is deployed: a new task definition revision, which
    // the deployed PlanRun bundle's environment names from then on.
    endpoint.reset();
    const failing = 'grouprms';
    const hosted = hostedModels(modelsFile);
    const resolved = resolveRun({ model: ['fake'], samples: '1', paper: true, timeout: '60', budget: '100' }, hosted);
    const first = await emulateCloudRun(
      { pset: resolved.pset, templateText: resolved.template.text, spec: resolved.spec, models: resolved.models.info },
      { workflow, modelsFile, keys: { [KEY_ENV]: 'fake-key' }, python: '/usr/bin/python3' },
      { failShard: (paper) => paper === failing, deployImageAfterShards: 1 },
    );
    try {
      // The first execution succeeds with errors: only the failing shard's tasks are left unjudged.
      expect([first.succeeded, first.error]).toEqual([true, undefined]);
      const failedRun = await first.store.getRun(first.runId);
      expect(failedRun?.status).toBe('succeeded_with_errors');
      // The deployed Aggregate put the run-ended event (PutEvents to the emulator's bus): its
      // status and figures are those of the report.json it stored (docs/cloud.md#run-events).
      const reportKey = `${cloudKeys.reportPrefix(first.runId)}report.json`;
      const report = JSON.parse((await first.blobs.get(reportKey))!.toString('utf8'));
      expect(first.events).toEqual([
        expect.objectContaining({
          runId: first.runId,
          status: 'succeeded_with_errors',
          reportKey,
          spentUsd: report.run.spentUsd,
          models: report.models.map((m: any) => ({
            model: m.model,
            scaledPass1: m.scaled.mean,
            scaledPass1Ci: m.scaled.ci,
            pass1: m.pass1.mean,
            pass1Ci: m.pass1.ci,
            tasks: m.tasks,
          })),
        }),
      ]);
      const tasks = await first.store.listTasks(first.runId);
      const judgedBefore = new Map((await first.store.listVerdicts(first.runId)).map((v) => [v.taskId, v.createdAt]));
      expect(judgedBefore.size).toBeLessThan(tasks.length);
      const calledBefore = [...endpoint.reset().answered.values()].reduce((a, b) => a + b, 0);
      // Every task answered once: should one not be, its completion's error says why.
      const completions = await first.store.getCompletions(tasks.map((t) => t.taskId));
      expect([...completions.values()].filter((c) => c.error).map((c) => [c.taskId, c.attempt, c.error])).toEqual([]);
      expect(calledBefore).toBe(tasks.length);
      const shardRunsBefore = first.shardRuns.length;

      // Act
      const second = await first.runAgain();

      // Assess
      expect([second.succeeded, second.error]).toEqual([true, undefined]);
      expect(second.runId).toBe(first.runId);
      expect((await second.store.getRun(second.runId))?.status).toBe('succeeded');
      expect(second.events.map((e) => [e.runId, e.status])).toEqual([[first.runId, 'succeeded']]);
      expect(endpoint.reset().answered.size).toBe(0);
      const verdicts = await second.store.listVerdicts(second.runId);
      expect(verdicts).toHaveLength(tasks.length);
      for (const v of verdicts) if (judgedBefore.has(v.taskId)) expect(v.createdAt).toBe(judgedBefore.get(v.taskId));
      const failingTasks = new Set(tasks.filter((t) => t.paper === failing).map((t) => t.taskId));
      expect([...failingTasks].every((id) => !judgedBefore.has(id))).toBe(true);
      // The deploy: PlanRun's bundle now names revision 2 (its second invocation ran in an
      // instance started so), yet every shard of both executions ran on revision 1, the pin.
      const [revision1, revision2] = first.evaluator.revisions.map((r) => r.taskDefinitionArn);
      expect([revision1, revision2]).toEqual([expect.stringMatching(/:1$/), expect.stringMatching(/:2$/)]);
      const pinning = Object.values(second.environments).filter((env) => env.RCB_TASK_DEFINITION !== undefined);
      expect(pinning.map((env) => [env.RCB_TASK_DEFINITION, env.RCB_EVALUATION_IMAGE])).toEqual([[revision2, first.evaluator.revisions[1].image]]);
      expect(new Set(second.shardRuns.map((r) => r.taskDefinition))).toEqual(new Set([revision1]));
      expect(second.shardRuns.length).toBeGreaterThan(shardRunsBefore);
    } finally {
      await first.close();
    }
  }, 900_000);
});
