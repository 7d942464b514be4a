/**
 * `rcb cloud push | run | status | results | cancel`: a deployed stack driven from this
 * machine, and `rcb cloud run --emulate`, the same flow with no AWS account. Each command
 * parses its flags, finds the stack's outputs (bucket, table, state machine) from
 * CloudFormation by stack name, builds the AWS adapters and calls the use cases: the run
 * spec is built by the code `rcb run` uses, so a cloud run of the same flags has the same id.
 *
 * Heavy modules (AWS SDK clients, the emulator) are loaded inside the actions: registering
 * the commands costs `rcb validate` nothing.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SFNClient } from '@aws-sdk/client-sfn';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RunRecord, RunStore } from '../../core/store';
import type { HostedModels } from '../../adapters/models/hosted-models';
import { loadPromptTemplate, loadPsetOrFail, parseList, parsePositiveInt, parseReportFlags, UsageError } from './common';
import type { RunOptions } from './run-command';
import { addRunSpecOptions } from './run-options';

/** The stack outputs the commands need (infra/rcb-stack.ts CfnOutputs). */
export interface StackOutputs {
  bucket: string;
  table: string;
  stateMachineArn: string;
}

export const OUTPUT_KEYS = { bucket: 'ArtifactsBucketName', table: 'RunsTableName', stateMachineArn: 'RunWorkflowArn' } as const;
export const DEFAULT_STACK_NAME = 'Rcb';

/** What the commands talk to; tests mock the clients with aws-sdk-client-mock. */
export interface CloudDeps {
  cfn: CloudFormationClient;
  s3: S3Client;
  doc: DynamoDBDocumentClient;
  sfn: SFNClient;
  out: (text: string) => void;
  err: (text: string) => void;
  sleep: (ms: number) => Promise<void>;
  /** Pause between two progress polls of a watched run, ms. */
  pollMs: number;
}

export interface StackFlags {
  stackName: string;
  region?: string;
}

/** SDK clients for the region given (else the SDK's own resolution: AWS_REGION, profile). */
export function defaultCloudDeps(region?: string): CloudDeps {
  const { CloudFormationClient } = require('@aws-sdk/client-cloudformation') as typeof import('@aws-sdk/client-cloudformation');
  const { S3Client } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  const { SFNClient } = require('@aws-sdk/client-sfn') as typeof import('@aws-sdk/client-sfn');
  const { DynamoDBClient } = require('@aws-sdk/client-dynamodb') as typeof import('@aws-sdk/client-dynamodb');
  const { DynamoDBDocumentClient } = require('@aws-sdk/lib-dynamodb') as typeof import('@aws-sdk/lib-dynamodb');
  const config = region ? { region } : {};
  return {
    cfn: new CloudFormationClient(config),
    s3: new S3Client(config),
    doc: DynamoDBDocumentClient.from(new DynamoDBClient(config), { marshallOptions: { removeUndefinedValues: true } }),
    sfn: new SFNClient(config),
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    pollMs: 10_000,
  };
}

export async function findStackOutputs(cfn: CloudFormationClient, stackName: string): Promise<StackOutputs> {
  const { DescribeStacksCommand } = require('@aws-sdk/client-cloudformation') as typeof import('@aws-sdk/client-cloudformation');
  let stacks;
  try {
    ({ Stacks: stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName })));
  } catch (e) {
    const err = e as Error;
    if (/does not exist/.test(err.message)) throw new UsageError(`stack ${stackName} does not exist in this account and region; deploy it (npx cdk deploy) or pass --stack-name/--region`);
    // No region anywhere (flag, AWS_REGION, profile): the usual case of a machine that only ever emulated.
    if (/Region is missing/i.test(err.message)) {
      throw new UsageError(
        'no AWS region: pass --region or set AWS_REGION (or a profile region) to reach a deployed stack; an emulated run (--emulate) lives only while its `rcb cloud run --emulate` runs, and its reports are what it printed and wrote to --out',
      );
    }
    throw new UsageError(`cannot describe stack ${stackName}: ${err.message}`);
  }
  const outputs = new Map((stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const get = (key: string): string => {
    const value = outputs.get(key);
    if (!value) throw new UsageError(`stack ${stackName} has no output ${key}: is it an rcb stack, fully deployed?`);
    return value;
  };
  return { bucket: get(OUTPUT_KEYS.bucket), table: get(OUTPUT_KEYS.table), stateMachineArn: get(OUTPUT_KEYS.stateMachineArn) };
}

/** `arn:aws:states:R:A:stateMachine:NAME` + run id -> `arn:aws:states:R:A:execution:NAME:RUNID`. */
export function executionArn(stateMachineArn: string, runId: string): string {
  const parts = stateMachineArn.split(':');
  if (parts.length < 7 || parts[5] !== 'stateMachine') throw new Error(`not a state machine ARN: ${stateMachineArn}`);
  return [...parts.slice(0, 5), 'execution', parts[6], runId].join(':');
}

function adapters(deps: CloudDeps, outputs: StackOutputs): { store: RunStore; blobs: import('../../core/store').BlobStore } {
  const { DynamoRunStore } = require('../../adapters/aws/dynamo-run-store') as typeof import('../../adapters/aws/dynamo-run-store');
  const { S3BlobStore } = require('../../adapters/aws/s3-blob-store') as typeof import('../../adapters/aws/s3-blob-store');
  const blobs = new S3BlobStore(deps.s3, { bucket: outputs.bucket });
  return { store: new DynamoRunStore(deps.doc, { tableName: outputs.table, blobs }), blobs };
}

// ---- push ----

export interface PushOptions extends StackFlags {
  pset?: string;
  papers?: string;
  promptTemplate?: string;
}

export async function cloudPush(opts: PushOptions, deps: CloudDeps): Promise<number> {
  const { uploadPsetBundle, uploadPromptTemplate } = require('../../core/cloud/pset-bundle') as typeof import('../../core/cloud/pset-bundle');
  const pset = loadPsetOrFail(opts.pset, parseList(opts.papers));
  const template = loadPromptTemplate(opts.promptTemplate);
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { blobs } = adapters(deps, outputs);
  const psetKey = await uploadPsetBundle(blobs, pset);
  const templateKey = await uploadPromptTemplate(blobs, template.text);
  deps.out(`pset: s3://${outputs.bucket}/${psetKey} (${pset.papers.length} paper(s), digest ${pset.digest})\nprompt template: s3://${outputs.bucket}/${templateKey}\n`);
  return 0;
}

// ---- run ----

export interface CloudRunOptions extends RunOptions, StackFlags {
  detach?: boolean;
  force?: boolean;
  emulate?: boolean;
  emulateDeliverTwice?: boolean;
  emulateFailShardOnce?: boolean;
}

/** Flags of `rcb run` that only this machine's evaluation reads. */
const LOCAL_ONLY_FLAGS: Array<[keyof CloudRunOptions, string]> = [
  ['jobs', '--jobs'],
  ['python', '--python'],
  ['unsafeNoSandbox', '--unsafe-no-sandbox'],
];

function resolveCloudRun(opts: CloudRunOptions, hosted: HostedModels) {
  const { resolveRun } = require('./resolve-run') as typeof import('./resolve-run');
  const resolved = resolveRun(opts, hosted);
  // The cloud rebuilds model clients from the spec: offline ones by name, replayed ones from
  // the file uploaded with the run, the rest from the deployed registry.
  const unknown = resolved.spec.models.filter(
    (m) => !['oracle', 'empty'].includes(m.id) && typeof resolved.models.info[m.id]?.config.replay !== 'string' && !hosted.resolve(m.id, { temperature: resolved.temperature }),
  );
  if (unknown.length) throw new UsageError(`the cloud runs oracle, empty, replay:FILE and registry models only; not ${unknown.map((m) => m.id).join(', ')}`);
  return resolved;
}

export async function cloudRun(opts: CloudRunOptions, hosted: HostedModels, deps: CloudDeps): Promise<number> {
  if (opts.emulate) return emulatedRun(opts, hosted, deps);
  const { StartExecutionCommand } = require('@aws-sdk/client-sfn') as typeof import('@aws-sdk/client-sfn');
  const { uploadPsetBundle, uploadPromptTemplate, uploadReplayFiles } = require('../../core/cloud/pset-bundle') as typeof import('../../core/cloud/pset-bundle');
  const { parsePayload, runWorkflowInputSchema } = require('../../core/cloud/payloads') as typeof import('../../core/cloud/payloads');
  const ignored = LOCAL_ONLY_FLAGS.filter(([k]) => opts[k] !== undefined && opts[k] !== false).map(([, flag]) => flag);
  if (opts.modelsFile) ignored.push('--models-file (the deployed registry prices and routes)');
  if (ignored.length) deps.err(`note: ignored in the cloud: ${ignored.join(', ')}\n`);

  const { pset, template, spec, runId, models } = resolveCloudRun(opts, hosted);
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { blobs, store } = adapters(deps, outputs);
  const psetKey = await uploadPsetBundle(blobs, pset);
  await uploadPromptTemplate(blobs, template.text);
  await uploadReplayFiles(blobs, spec, models.info);
  const input = parsePayload(
    runWorkflowInputSchema,
    { runId, spec: { ...spec, psetRoot: psetKey }, models: models.info, ...(opts.force ? { force: true } : {}) },
    'run workflow input',
  );
  const { startOrFollow } = require('../../core/cloud/execution-attempts') as typeof import('../../core/cloud/execution-attempts');
  const port = executionPort(deps, outputs, (name) => new StartExecutionCommand({ stateMachineArn: outputs.stateMachineArn, name, input: JSON.stringify(input) }));
  const attempt = await startOrFollow(port, runId);
  const arn = executionArn(outputs.stateMachineArn, attempt.name);
  if (attempt.started) {
    const again = attempt.earlier.length ? ` again (attempt ${attempt.attempt}; earlier: ${attempt.earlier.join(', ')}), resuming from what is stored` : '';
    deps.err(`run ${runId} started${again}: ${pset.papers.length} paper(s), ${spec.models.length} model(s), ${spec.samples} sample(s)\nexecution ${arn}\n`);
  } else {
    deps.err(`run ${runId} was started before (execution ${attempt.name}); watching it\n`);
  }
  if (opts.detach) {
    deps.out(`${runId}\n`);
    deps.err(`watch it with \`rcb cloud status ${runId}\`; read it with \`rcb cloud results ${runId}\`\n`);
    return 0;
  }
  return watchRun(deps, arn, store, blobs, runId);
}

/** The run's executions through the SDK: one name per attempt (core/cloud/execution-attempts.ts). */
function executionPort(
  deps: CloudDeps,
  outputs: StackOutputs,
  startCommand?: (name: string) => import('@aws-sdk/client-sfn').StartExecutionCommand,
): import('../../core/cloud/execution-attempts').ExecutionPort {
  const { DescribeExecutionCommand } = require('@aws-sdk/client-sfn') as typeof import('@aws-sdk/client-sfn');
  return {
    async start(name) {
      if (!startCommand) throw new Error('no execution to start here');
      try {
        await deps.sfn.send(startCommand(name));
        return true;
      } catch (e) {
        if ((e as Error).name === 'ExecutionAlreadyExists') return false;
        throw e;
      }
    },
    async status(name) {
      try {
        const d = await deps.sfn.send(new DescribeExecutionCommand({ executionArn: executionArn(outputs.stateMachineArn, name) }));
        return (d?.status ?? null) as import('../../core/cloud/execution-attempts').ExecutionStatus | null;
      } catch (e) {
        if ((e as Error).name === 'ExecutionDoesNotExist') return null;
        throw e;
      }
    },
  };
}

/** ARN of the run's latest execution (its run id's when it never started). */
async function latestExecutionArn(deps: CloudDeps, outputs: StackOutputs, runId: string): Promise<string> {
  const { latestAttempt } = require('../../core/cloud/execution-attempts') as typeof import('../../core/cloud/execution-attempts');
  const latest = await latestAttempt(executionPort(deps, outputs), runId);
  return executionArn(outputs.stateMachineArn, latest?.name ?? runId);
}

interface Progress {
  total: number;
  answered: number;
  failed: number;
  judged: number;
}

async function progressOf(store: RunStore, runId: string): Promise<Progress> {
  // The run item's counters when it has them (one read per poll), else the items themselves.
  const counts = 'getCounts' in store ? await (store as unknown as import('../../core/cloud/ports').RunCounters).getCounts(runId) : null;
  // Duplicate deliveries can count a task twice: never show more than the total.
  if (counts) return { total: counts.total, answered: Math.min(counts.settled, counts.total), failed: Math.min(counts.failed, counts.total), judged: Math.min(counts.judged, counts.total) };
  const tasks = await store.listTasks(runId);
  const completions = await store.getCompletions(tasks.map((t) => t.taskId));
  const verdicts = await store.listVerdicts(runId);
  return { total: tasks.length, answered: completions.size, failed: [...completions.values()].filter((c) => c.error).length, judged: verdicts.length };
}

/** One line of a run's status and progress; a run not yet planned reads nothing more. */
async function progressLine(store: RunStore, run: RunRecord | null): Promise<string> {
  if (!run) return 'not planned yet';
  const p = await progressOf(store, run.runId);
  const spend = run.spentUsd > 0 || run.spec.budgetUsd !== null ? `, spend $${run.spentUsd.toFixed(4)}${run.spec.budgetUsd !== null ? ` of $${run.spec.budgetUsd.toFixed(2)}` : ''}` : '';
  return `${run.status}: ${p.answered}/${p.total} answered${p.failed ? ` (${p.failed} failed)` : ''}, ${p.judged}/${p.total} judged${spend}`;
}

const EXIT_BY_STATUS: Record<string, number> = { succeeded: 0, budget_exhausted: 3, cancelled: 1, failed: 1 };

/** Polls the execution and the run item until the execution ends; prints the leaderboard. */
async function watchRun(deps: CloudDeps, arn: string, store: RunStore, blobs: import('../../core/store').BlobStore, runId: string): Promise<number> {
  const { DescribeExecutionCommand } = require('@aws-sdk/client-sfn') as typeof import('@aws-sdk/client-sfn');
  let last = '';
  for (;;) {
    const execution = await deps.sfn.send(new DescribeExecutionCommand({ executionArn: arn }));
    const run = await store.getRun(runId);
    const line = await progressLine(store, run);
    if (line !== last) deps.err(`${line}\n`);
    last = line;
    if (execution.status !== 'RUNNING' && execution.status !== 'PENDING_REDRIVE') {
      if (execution.status === 'SUCCEEDED') {
        const { CLOUD_REPORTS } = require('../../core/cloud/aggregate-run') as typeof import('../../core/cloud/aggregate-run');
        const { cloudKeys } = require('../../core/cloud/payloads') as typeof import('../../core/cloud/payloads');
        const board = await blobs.get(cloudKeys.reportPrefix(runId) + CLOUD_REPORTS[0].file);
        if (board) deps.out('\n' + board.toString('utf8'));
      }
      deps.err(`run ${run?.status ?? 'unknown'} (execution ${execution.status})${run?.error ? `: ${run.error}` : execution.error ? `: ${execution.error} ${execution.cause ?? ''}` : ''}\n`);
      if (execution.status === 'SUCCEEDED') deps.err(`read it with \`rcb cloud results ${runId} [--format ...]\`\n`);
      return execution.status === 'SUCCEEDED' ? (EXIT_BY_STATUS[run?.status ?? 'succeeded'] ?? 0) : 1;
    }
    await deps.sleep(deps.pollMs);
  }
}

async function emulatedRun(opts: CloudRunOptions, hosted: HostedModels, deps: CloudDeps): Promise<number> {
  const { emulateCloudRun } = require('../../emulator/emulated-run') as typeof import('../../emulator/emulated-run');
  const { buildReport } = require('../../core/report/build-report') as typeof import('../../core/report/build-report');
  const { defaultPython } = require('./common') as typeof import('./common');
  const { pset, template, spec, runId, models } = resolveCloudRun(opts, hosted);
  const started = Date.now();
  deps.err(`run ${runId} (emulated): ${pset.papers.length} paper(s), ${spec.models.length} model(s), ${spec.samples} sample(s); synthesizing the stack and bundling its functions\n`);
  const run = await emulateCloudRun(
    { pset, templateText: template.text, spec, models: models.info, force: opts.force },
    {
      deliverTwice: opts.emulateDeliverTwice,
      failFirstShardOnce: opts.emulateFailShardOnce,
      python: opts.python ?? defaultPython(),
      jobs: opts.jobs ? parsePositiveInt('--jobs', opts.jobs) : undefined,
      unsafeNoSandbox: opts.unsafeNoSandbox,
      // The deployed bundles carry the registry: --models-file is synthesized into them.
      modelsFile: opts.modelsFile ? resolve(opts.modelsFile) : undefined,
      onState: (state, result) => deps.err(`${describeState(state, result)}\n`),
    },
  );
  try {
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const runRecord = await run.store.getRun(run.runId);
    if (run.succeeded) {
      const { text } = await buildReport(run.store, run.runId, { format: 'table', judge: 'strict', subset: 'all' });
      deps.out('\n' + text);
      if (opts.out) {
        const official = await buildReport(run.store, run.runId, { format: 'official', judge: 'official', subset: 'all' });
        const dir = resolve(opts.out);
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'leaderboard.txt'), text);
        writeFileSync(join(dir, 'overall_stats.json'), official.text);
      }
    }
    const l = run.lanes;
    const failedShards = run.shardRuns.filter((s) => s.code !== 0).length;
    deps.err(
      `\nrun ${runRecord?.status ?? 'unknown'} (emulated) in ${seconds}s: ${l.sent} message(s) sent, ${l.delivered} delivered, ` +
        `${run.shardRuns.length} container run(s) (${failedShards} failed)` +
        (l.deadLettered.length ? `, ${l.deadLettered.length} dead-lettered` : '') +
        (run.error ? `\nexecution failed: ${run.error.name}: ${run.error.message}` : '') +
        '\n',
    );
    if (!run.succeeded) return 1;
    return EXIT_BY_STATUS[runRecord?.status ?? 'succeeded'] ?? 0;
  } finally {
    await run.close();
  }
}

function describeState(state: string, result: unknown): string {
  const r = (result ?? {}) as Record<string, any>;
  switch (state) {
    case 'PlanRun':
      return `PlanRun: ${r.taskCount} task(s), ${r.enqueued} enqueued, ${r.shards?.length} shard(s)`;
    case 'CheckProgress':
      return `CheckProgress: ${r.settled}/${r.total} answered${r.failed ? ` (${r.failed} failed)` : ''}${r.done ? ', generation done' : ''}`;
    case 'Aggregate':
      return `Aggregate: ${r.status}`;
    default:
      return `${state}: ${r.error ? `failed (${r.error})` : 'done'}`;
  }
}

// ---- status, results, cancel ----

export async function cloudStatus(runId: string, opts: StackFlags, deps: CloudDeps): Promise<number> {
  const { DescribeExecutionCommand } = require('@aws-sdk/client-sfn') as typeof import('@aws-sdk/client-sfn');
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { store } = adapters(deps, outputs);
  const run = await store.getRun(runId);
  let execution: { status?: string; startDate?: Date; stopDate?: Date; error?: string } | undefined;
  try {
    execution = await deps.sfn.send(new DescribeExecutionCommand({ executionArn: await latestExecutionArn(deps, outputs, runId) }));
  } catch (e) {
    if ((e as Error).name !== 'ExecutionDoesNotExist') throw e;
  }
  if (!run && !execution) throw new UsageError(`no run ${runId} in stack ${opts.stackName}`);
  const lines = [`run ${runId}`];
  if (execution) {
    const when = `started ${execution.startDate?.toISOString() ?? '?'}${execution.stopDate ? `, stopped ${execution.stopDate.toISOString()}` : ''}`;
    lines.push(`execution: ${execution.status} (${when})${execution.error ? `, error ${execution.error}` : ''}`);
  } else lines.push('execution: none');
  lines.push(`progress: ${await progressLine(store, run)}`);
  if (run?.error) lines.push(`error: ${run.error}`);
  deps.out(lines.join('\n') + '\n');
  return 0;
}

export interface ResultsOptions extends StackFlags {
  format: string;
  judge?: string;
  subset: string;
}

export async function cloudResults(runId: string, opts: ResultsOptions, deps: CloudDeps): Promise<number> {
  const { CLOUD_REPORTS } = require('../../core/cloud/aggregate-run') as typeof import('../../core/cloud/aggregate-run');
  const { cloudKeys } = require('../../core/cloud/payloads') as typeof import('../../core/cloud/payloads');
  const { buildReport } = require('../../core/report/build-report') as typeof import('../../core/report/build-report');
  const { format, judge, subset } = parseReportFlags(opts);
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { store, blobs } = adapters(deps, outputs);
  // Aggregate wrote each format with its default judge over all papers: read that when it fits.
  const stored = CLOUD_REPORTS.find((r) => r.format === format);
  if (stored && subset === 'all' && (judge === undefined || judge === stored.judge)) {
    const body = await blobs.get(cloudKeys.reportPrefix(runId) + stored.file);
    if (body) {
      deps.out(body.toString('utf8'));
      return 0;
    }
  }
  const run = await store.getRun(runId);
  if (!run) throw new UsageError(`no run ${runId} in stack ${opts.stackName}`);
  const { text } = await buildReport(store, runId, { format, judge, subset }).catch((e: Error) => {
    throw new UsageError(e.message);
  });
  if (run.status !== 'succeeded') deps.err(`note: run ${runId} is ${run.status}; these are the results so far\n`);
  deps.out(text);
  return 0;
}

const FINISHED = new Set(['succeeded', 'failed', 'cancelled', 'budget_exhausted']);

export async function cloudCancel(runId: string, opts: StackFlags & { now?: boolean }, deps: CloudDeps): Promise<number> {
  const { StopExecutionCommand } = require('@aws-sdk/client-sfn') as typeof import('@aws-sdk/client-sfn');
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { store } = adapters(deps, outputs);
  const run = await store.getRun(runId);
  if (!run) throw new UsageError(`no run ${runId} in stack ${opts.stackName}`);
  if (FINISHED.has(run.status)) {
    deps.err(`run ${runId} already ended (${run.status}); nothing to cancel\n`);
    return 1;
  }
  // The generator reads the status before every paid call and CheckProgress ends generation
  // on it; what is answered is still evaluated and reported.
  await store.setRunStatus(runId, 'cancelled');
  if (opts.now) {
    await deps.sfn.send(new StopExecutionCommand({ executionArn: await latestExecutionArn(deps, outputs, runId), error: 'Cancelled', cause: 'rcb cloud cancel --now' }));
    deps.err(`run ${runId} cancelled and its execution stopped; finished answers and verdicts stay in the table\n`);
  } else {
    deps.err(`run ${runId} cancelled: no new model calls; what is answered is evaluated and reported (\`rcb cloud status ${runId}\`)\n`);
  }
  return 0;
}

// ---- registration ----

/** Adds `rcb cloud ...`; `onExit` receives each command's exit code (default: process.exitCode). */
export function registerCloudCommands(program: Command, onExit: (code: number) => void = (c) => void (process.exitCode = c)): void {
  const cloud = program.command('cloud').description('run in your AWS account (the stack of `npx cdk deploy`), or emulate that flow here');
  const stackFlags = (c: Command): Command =>
    c
      .option('--stack-name <name>', 'CloudFormation stack of rcb', DEFAULT_STACK_NAME)
      .option('--region <region>', 'AWS region (default: the SDK\'s: AWS_REGION, your profile)');
  const deps = (o: StackFlags): CloudDeps => defaultCloudDeps(o.region);

  stackFlags(cloud.command('push').description('upload a pset as a content-addressed bundle (psets/<digest>.json) and the prompt template'))
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .option('--prompt-template <file>', 'prompt template to use instead of the shipped one')
    .action(async (o) => onExit(await cloudPush(o, deps(o))));

  addRunSpecOptions(stackFlags(cloud.command('run').description('start a run in the stack and follow it to its leaderboard (same flags and run id as `rcb run`)')), {
    model: 'model: oracle, empty or a registry id (repeatable)',
    budget: 'hard cap on model spend for the run, USD (PlanRun refuses a larger estimate)',
  })
    .option('--force', 'start even when the cost estimate exceeds the budget (spend stays capped)')
    .option('--detach', 'print the run id and return once the execution has started')
    .option('--out <dir>', 'also write leaderboard.txt and overall_stats.json here (--emulate)')
    .option('--jobs <n>', 'tests at once per shard container (--emulate only)')
    .option('--python <path>', 'Python interpreter for the tests (--emulate only)')
    .option('--concurrency <n>', 'ignored: lane concurrency is set at deploy time (rcb:lanes)', '16')
    .option('--models-file <file>', 'registry entries merged over the shipped ones (--emulate; the cloud uses the deployed registry)')
    .option('--executor <kind>', 'ignored: shard containers use the warm executor', 'warm')
    .addOption(new Option('--unsafe-no-sandbox', 'run tests without bubblewrap (--emulate only)'))
    .option('--emulate', 'run the cloud flow on this machine: local DynamoDB and S3, the synthesized state machine, the container as a child process; no AWS account')
    .addOption(new Option('--emulate-deliver-twice', 'emulator fault: deliver every SQS message twice').hideHelp())
    .addOption(new Option('--emulate-fail-shard-once', 'emulator fault: the first shard container exits non-zero once').hideHelp())
    .action(async (o) => {
      const { hostedModels } = require('./model-commands') as typeof import('./model-commands');
      onExit(await cloudRun(o, hostedModels(o.modelsFile), o.emulate ? localOnlyDeps() : deps(o)));
    });

  stackFlags(cloud.command('status').description('execution state and progress of a run').argument('<run>', 'run id'))
    .action(async (run, o) => onExit(await cloudStatus(run, o, deps(o))));

  stackFlags(cloud.command('results').description('scores of a run, in the report formats of `rcb report`').argument('<run>', 'run id'))
    .option('--format <format>', 'table, json, csv, markdown, official (overall_stats.json) or html', 'table')
    .option('--judge <judge>', 'strict or official (default: strict; official for --format official)')
    .option('--subset <subset>', 'all, safe-common or safe-per-model', 'all')
    .action(async (run, o) => onExit(await cloudResults(run, o, deps(o))));

  stackFlags(cloud.command('cancel').description('stop a run\'s model calls; what is answered is still evaluated and reported').argument('<run>', 'run id'))
    .option('--now', 'also stop the execution at once (no evaluation or reports of what finished)')
    .action(async (run, o) => onExit(await cloudCancel(run, o, deps(o))));
}

/** The emulator talks to no AWS service: only the output functions of CloudDeps are used. */
function localOnlyDeps(): CloudDeps {
  const unused = new Proxy({}, { get: () => { throw new Error('the emulator uses no AWS client'); } }) as never;
  return {
    cfn: unused,
    s3: unused,
    doc: unused,
    sfn: unused,
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    pollMs: 0,
  };
}
