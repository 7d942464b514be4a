/**
 * `rcb cloud push | run | status | results | cancel`: a deployed stack driven from this
 * machine, and `--emulate`, the same flow with no AWS account. Each subcommand is a file of
 * this folder; what they decide (attempts, progress, exit codes, cancel) is in core/cloud.
 * Heavy modules are loaded inside the actions: registering costs `rcb validate` nothing.
 */
import { Option, type Command } from 'commander';
import { addRunSpecOptions } from '../run-options';
import type { CloudDeps } from '../../../app/deployed-stack';
import { DEFAULT_STACK_NAME, type StackFlags } from './stack-flags';
import type * as ModelsModule from '../../../app/models';
import type * as CloudDepsModule from '../../../app/deployed-stack';
import type * as RunEmulatedModule from './run-emulated';
import type * as RunModule from './run';
import type * as CancelModule from './cancel';
import type * as ResultsModule from './results';
import type * as StatusModule from './status';
import type * as PushModule from './push';
import type * as DoctorModule from './doctor';
import type * as PushImageModule from './push-image';
import type * as EcrModule from '@aws-sdk/client-ecr';

// The commands' modules, loaded on use: registering must not load the AWS SDK or the emulator.
// (A typed require: `await import()` of a relative path fails where rcb.ts runs under `node -r tsx/cjs`.)
const loadPush = (): typeof PushModule => require('./push');
const loadStatus = (): typeof StatusModule => require('./status');
const loadResults = (): typeof ResultsModule => require('./results');
const loadCancel = (): typeof CancelModule => require('./cancel');
const loadRun = (): typeof RunModule => require('./run');
const loadEmulatedRun = (): typeof RunEmulatedModule => require('./run-emulated');
const loadDoctor = (): typeof DoctorModule => require('./doctor');
const loadPushImage = (): typeof PushImageModule => require('./push-image');

/** Adds `rcb cloud ...`; `onExit` receives each command's exit code (default: process.exitCode). */
export function registerCloudCommands(program: Command, onExit: (code: number) => void = (c) => void (process.exitCode = c)): void {
  const cloud = program.command('cloud').description('run in your AWS account (the stack of `npx cdk deploy`), or emulate that flow here');
  const stackFlags = (c: Command): Command =>
    c
      .option('--stack-name <name>', 'CloudFormation stack of rcb', DEFAULT_STACK_NAME)
      .option('--region <region>', "AWS region (default: the SDK's: AWS_REGION, your profile)");
  const emulateFlags = (c: Command, what: string): Command =>
    c.option('--emulate', what).option('--state-dir <dir>', "folder of the emulated cloud's table, bucket and executions (--emulate; default ~/.rcb/emulator)");
  const deps = async (o: StackFlags & { emulate?: boolean }): Promise<CloudDeps> => {
    const { consoleOutput, defaultCloudDeps }: typeof CloudDepsModule = require('../../../app/deployed-stack');
    return o.emulate ? localOnlyDeps(consoleOutput()) : defaultCloudDeps(o.region);
  };

  stackFlags(cloud.command('push').description('upload a pset as a content-addressed bundle (psets/<digest>.json) and the prompt template'))
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .option('--prompt-template <file>', 'prompt template to use instead of the shipped one')
    .action(async (o) => onExit(await loadPush().cloudPush(o, await deps(o))));

  stackFlags(
    cloud
      .command('push-image')
      .description("push an image of `npm run image:build` to the stack's image repository and print the `cdk deploy -c rcb:image=...` line"),
  )
    .option('--image <ref>', 'local image to push', 'localhost/rcb-evaluator:latest')
    .option('--repository <uri>', "ECR repository URI to push to (default: the stack's ImageRepositoryUri output)")
    .option('--tag <tag>', 'tag in the repository (default: rcb-<12 hex of the local image id>; tags are immutable)')
    .option('--engine <engine>', 'podman or docker (default: podman if on PATH, else docker)')
    .option('--compression <format>', "the pushed layers' compression, zstd or gzip (default: zstd with podman, gzip with docker)")
    .action(async (o) => {
      const { ECRClient }: typeof EcrModule = require('@aws-sdk/client-ecr');
      const { defaultCloudDeps }: typeof CloudDepsModule = require('../../../app/deployed-stack');
      const cloudDeps = defaultCloudDeps(o.region);
      onExit(await loadPushImage().cloudPushImage(o, { ...cloudDeps, ecr: new ECRClient(o.region ? { region: o.region } : {}) }));
    });

  const run = addRunSpecOptions(
    stackFlags(cloud.command('run').description('start a run in the stack and follow it to its leaderboard (same flags and run id as `rcb run`)')),
    {
      model: 'model: oracle, empty, replay:FILE (recorded answers, uploaded with the run) or a registry id (repeatable)',
      budget: 'hard cap on model spend for the run, USD (PlanRun refuses a larger estimate)',
    },
  )
    .option('--force', 'start even when the cost estimate exceeds the budget (spend stays capped)')
    .option(
      '--batch',
      "every registry model through its provider's batch API, in the workflow's batch lane: half price, answers within the providers' 24 h window",
    )
    .option(
      '--deadline <duration>',
      "how long generation may run before the run is failed, e.g. 36h or 90m (at most 48h; default: the stack's, 24h); recorded in the run's workflow input",
    )
    .option('--detach', 'print the run id and return once the execution has started')
    .option('--skip-doctor', 'start without checking the account first (`rcb cloud doctor`; --emulate never checks: it has no account)')
    .option('--out <dir>', 'also write leaderboard.txt and overall_stats.json here (--emulate)')
    .option('--jobs <n>', 'tests at once per shard container (--emulate only)')
    .option('--python <path>', 'Python interpreter for the tests (--emulate only)')
    .option('--concurrency <n>', 'ignored: lane concurrency is set at deploy time (rcb:lanes)', '16')
    .option('--models-file <file>', 'registry entries merged over the shipped ones (--emulate; the cloud uses the deployed registry)')
    .option('--executor <kind>', 'ignored: shard containers use the warm executor', 'warm')
    .addOption(new Option('--unsafe-no-sandbox', 'run tests without bubblewrap (--emulate only)'));
  emulateFlags(
    run,
    'run the cloud flow on this machine: local DynamoDB and S3, the synthesized state machine, the container from the image layout; no AWS account',
  )
    .addOption(new Option('--emulate-deliver-twice', 'emulator fault: deliver every SQS message twice').hideHelp())
    .addOption(new Option('--emulate-fail-shard-once', 'emulator fault: the first shard container exits non-zero once').hideHelp())
    .action(async (o) => {
      const { hostedModels }: typeof ModelsModule = require('../../../app/models');
      const hosted = hostedModels(o.modelsFile);
      if (o.emulate) onExit(await loadEmulatedRun().emulatedRun(o, hosted, await deps(o)));
      else onExit(await loadRun().cloudRun(o, hosted, await deps(o)));
    });

  emulateFlags(
    stackFlags(cloud.command('status').description('execution state and progress of a run').argument('<run>', 'run id')),
    'a run of `rcb cloud run --emulate`, from its state folder',
  ).action(async (id, o) => onExit(await loadStatus().cloudStatus(id, o, await deps(o))));

  emulateFlags(
    stackFlags(cloud.command('results').description('scores of a run, in the report formats of `rcb report`').argument('<run>', 'run id')),
    'a run of `rcb cloud run --emulate`, from its state folder',
  )
    .option('--format <format>', 'table, json, csv, markdown, official (overall_stats.json) or html', 'table')
    .option('--judge <judge>', 'strict or official (default: strict; official for --format official)')
    .option('--subset <subset>', 'all, safe-common or safe-per-model', 'all')
    .option('--out <file>', 'write the report to this file instead of stdout (the html page: open it in a browser)')
    .option('--url', 'print a presigned URL of the stored report (e.g. report.html) instead of fetching it; valid one hour (deployed stack only)')
    .action(async (id, o) => onExit(await loadResults().cloudResults(id, o, await deps(o))));

  addRunSpecOptions(
    stackFlags(
      cloud
        .command('doctor')
        .description("whether a run or sweep fits the account's quotas (Lambda, Fargate, Step Functions, model rate limits), and its infrastructure cost"),
    ),
    { model: 'model of the run to check (repeatable; or --sweep)' },
  )
    .option('--sweep <file>', 'check the run of this sweep file instead of the run flags')
    .option('--models-file <file>', 'registry entries merged over the shipped ones')
    .option('--call-sec <sec>', 'assumed seconds of one model call (calls per minute per lane)')
    .action(async (o) => {
      const doctor = loadDoctor();
      onExit(await doctor.cloudDoctor(o, doctor.defaultDoctorDeps(o.region)));
    });

  stackFlags(cloud.command('cancel').description("stop a run's model calls; what is answered is still evaluated and reported").argument('<run>', 'run id'))
    .option('--now', 'also stop the execution at once (no evaluation or reports of what finished)')
    .action(async (id, o) => onExit(await loadCancel().cloudCancel(id, o, await deps(o))));
}

/** The emulator talks to no AWS service: only the output functions of CloudDeps are used. */
function localOnlyDeps(output: Pick<CloudDeps, 'out' | 'err' | 'sleep'>): CloudDeps {
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('the emulator uses no AWS client');
      },
    },
  ) as never;
  return { cfn: unused, s3: unused, doc: unused, sfn: unused, ...output, pollMs: 0 };
}
