#!/usr/bin/env node
/**
 * The rcb command line. Each command parses its flags, builds adapters and calls one use
 * case; errors the user can act on are printed without a stack trace.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { packageRoot } from '../core/util/package-root';
import { DAMAGED_EXIT, UsageError } from './commands/common';
import { StoreFileError } from '../adapters/local/sqlite-store';
import { addRunSpecOptions } from './commands/run-options';
import { validateCommand, tasksCommand, promptCommand } from './commands/pset-commands';
import { reportCommand, importOfficialCommand } from './commands/report-commands';
import { registerSubsetCommands } from './commands/subset-commands';
import type * as RegisterCloudCommandsModule from './commands/cloud/register-cloud-commands';
import type * as SweepRunCommandModule from './commands/sweep-run-command';
import type * as SweepCommandsModule from './commands/sweep-commands';
import type * as RejudgeCommandModule from './commands/rejudge-command';
import type * as RunsCommandModule from './commands/runs-command';
import type * as CompareCommandModule from './commands/compare-command';
import type * as ShowCommandModule from './commands/show-command';
import type * as ModelCommandsModule from './commands/model-commands';
import type * as DoctorCommandModule from './commands/doctor-command';
import type * as ModelsModule from '../app/models';
import type * as RunCommandModule from './commands/run-command';
import type * as PromptsCommandModule from './commands/prompts-command';
import type * as OverlayCommandModule from './commands/overlay-command';
import type * as EnvCommandModule from './commands/env-command';
import type * as ExportCommandModule from './commands/export-command';

// rcb supports Node 20 (docs/running-locally.md, "Node versions"): the AWS SDK's notice that its releases
// after January 2027 will need Node 22 is about versions this lockfile does not install,
// and it printed a screenful before every cloud command. A user who sets the variable keeps their choice.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function version(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Messages from deeper layers often name their origin already ("rcb: cannot run ..."); the
 * entry point adds the prefix once.
 */
function userMessage(message: string): string {
  return `rcb: ${message.replace(/^(rcb:\s*)+/, '')}`;
}

/**
 * A reader that stops early (`rcb tasks | head`) closes the pipe: that is the end of the
 * output, not an error. Without this, the next write fails with EPIPE and a stack trace.
 */
function endQuietlyOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

async function main(argv: string[]): Promise<number> {
  let code = 0;
  const program = new Command()
    .name('rcb')
    .description("Run the ResearchCodeBench benchmark: models fill in masked code from ML papers, the papers' own tests judge it.")
    .version(version(), '-V, --version', 'print the version of rcb')
    .showHelpAfterError()
    .exitOverride();

  program
    .command('validate')
    .description('check a pset (papers.yaml, folders, snippet markers); prints every problem as path:line: message')
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .action((o) => {
      code = validateCommand(o);
    });

  program
    .command('overlay')
    .description("write the pset with an overlay's documented patches (a seed, a tolerance) to a new folder; the original is kept (docs/environment-checks.md)")
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .requiredOption('--overlay <dir>', 'overlay folder: overlay.yaml (file, reason per entry) and the replacement files')
    .requiredOption('--out <dir>', 'new folder for the patched pset')
    .action((o) => {
      const { overlayCommand }: typeof OverlayCommandModule = require('./commands/overlay-command');
      code = overlayCommand(o);
    });

  program
    .command('tasks')
    .description('list the tasks (snippets) of a pset')
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .option('--json', 'JSON array of {paper, file, snippet, loc, parent}')
    .action((o) => {
      code = tasksCommand(o);
    });

  program
    .command('prompt')
    .description('print the exact prompt of one task')
    .argument('<paper>', 'paper id')
    .argument('<snippet>', 'snippet name')
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .option('--no-paper', "leave the paper text out (the paper's ablation)")
    .option('--prompt-template <name|file>', "prompt template: original (the default: the original harness's prompt, byte for byte), rcb, or a template file")
    .action((paper, snippet, o) => {
      code = promptCommand(paper, snippet, o);
    });

  program
    .command('prompts')
    .description("every task's exact prompt as JSONL: one {paper, file, snippet, no_paper, prompt} per line")
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .option('--no-paper', "leave the paper text out (the paper's ablation)")
    .option('--prompt-template <name|file>', "prompt template: original (the default: the original harness's prompt, byte for byte), rcb, or a template file")
    .action(async (o) => {
      const { promptsCommand }: typeof PromptsCommandModule = require('./commands/prompts-command');
      code = promptsCommand(o);
    });

  addSandboxOptions(addRunSpecOptions(program.command('run').description('run the benchmark on this machine; rerunning the same command resumes it')))
    .option('--jobs <n>', 'tests run at once (default: one per core)')
    .option('--python <path>', 'Python interpreter for the tests (default: $RCB_PYTHON, the `rcb env install` environment, /usr/bin/python3, python3)')
    .option('--out <dir>', 'run directory (default: runs/<models>-<run id>, derived from the run spec)')
    .option('--subset <file>', 'only the tasks of a subset file (rcb subset build); reports then estimate the full-set score (docs/subsets.md)')
    .option('--concurrency <n>', 'model calls in flight at once (hosted models)', '16')
    .option('--models-file <file>', 'model registry entries merged over the shipped resources/models.yaml')
    .option('--executor <kind>', 'warm (a pre-imported Python per worker, forked per test) or cold (a fresh interpreter per test)', 'warm')
    .option('--skip-env-check', "do not check first that each paper's oracle passes here (papers whose tests cannot run then score as model failures)")
    .option(
      '--batch',
      "send every hosted model's tasks through its provider's batch API (about half price, answers within 24 h); rerun to collect pending batches",
    )
    .option('--batch-poll <seconds>', 'seconds between polls of pending batches (--batch)', '60')
    .option('--cancel-batches', "with --batch: cancel the run's pending batches, keep what they answered")
    .action(async (o) => {
      // Loaded on use: the run's adapters are heavier than what the pset commands need.
      const { runCommand }: typeof RunCommandModule = require('./commands/run-command');
      const { hostedModels }: typeof ModelsModule = require('../app/models');
      code = await runCommand(o, hostedModels(o.modelsFile));
    });

  addSandboxOptions(program.command('doctor'))
    .description(
      "run each paper's oracle here: which papers' tests run, and for the others the missing module or first error line (exit 1 if any does not run)",
    )
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .option('--python <path>', 'Python interpreter for the tests (default: $RCB_PYTHON, the `rcb env install` environment, /usr/bin/python3, python3)')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .option('--json', 'JSON array of {paper, runs, reason}')
    .option('--timeout <seconds>', 'time limit of one test run', '60')
    .option(
      '--repeat <n>',
      "run every snippet's oracle N times and list the snippets whose verdict changes (flaky references; rcb run then flags their verdicts); exit 1 if any",
    )
    .option('--jobs <n>', 'tests at once with --repeat (default: one per CPU)')
    .action(async (o) => {
      const { doctorCommand }: typeof DoctorCommandModule = require('./commands/doctor-command');
      code = await doctorCommand(o);
    });

  const env = program.command('env').description("the papers' locked Python environment (docs/paper-environment.md)");
  env
    .command('install')
    .description('create or update the environment from the lock (container/requirements.txt); prints its interpreter')
    .option('--dir <dir>', 'where (default: $RCB_ENV_DIR, else ~/.rcb/env; as root /var/lib/rcb/env)')
    .option('--wheelhouse <dir>', 'downloaded files, kept for the next install (default: $RCB_WHEELHOUSE, else ~/.rcb/wheelhouse)')
    .option('--lock <file>', 'another hashed lock (default: the shipped container/requirements.txt)')
    .option('--base-python <path>', 'the Python 3.11 the virtualenv is made from (default: /usr/bin/python3.11, else python3.11)')
    .option('--offline', 'download nothing: every locked file must be in the wheelhouse already')
    .option(
      '--torch-index <url>',
      "PyTorch's CPU-only wheels from this index instead of the lock's CUDA build (torch, torchvision as <version>+cpu, no nvidia-* packages; their sha256 is recorded, not locked)",
    )
    .action(async (o) => {
      const { envInstallCommand }: typeof EnvCommandModule = require('./commands/env-command');
      code = await envInstallCommand(o);
    });
  env
    .command('path')
    .description("print the installed environment's interpreter (exit 1 if there is none)")
    .option('--dir <dir>', 'where (default: as for env install)')
    .action((o) => {
      const { envPathCommand }: typeof EnvCommandModule = require('./commands/env-command');
      code = envPathCommand(o);
    });

  program
    .command('models')
    .description('list the model registry (shipped resources/models.yaml, merged with --models-file)')
    .option('--models-file <file>', 'registry entries merged over the shipped ones, by id')
    .action(async (o) => {
      const { modelsCommand }: typeof ModelCommandsModule = require('./commands/model-commands');
      code = modelsCommand(o);
    });

  program
    .command('estimate')
    .description('calls, input tokens and expected cost of a run with hosted models, before paying for it')
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .addOption(new Option('--model <id>', 'registry model id (repeatable)').argParser(collect).default([], 'none'))
    .option('--samples <n>', 'completions per task', '1')
    .option('--temperature <t>', 'sampling temperature')
    .option('--no-paper', 'leave the paper text out of prompts')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .option('--prompt-template <name|file>', "prompt template: original (the default: the original harness's prompt, byte for byte), rcb, or a template file")
    .option('--budget <usd>', 'compare the estimate with this budget')
    .option('--models-file <file>', 'registry entries merged over the shipped ones, by id')
    .action(async (o) => {
      const { estimateCommand }: typeof ModelCommandsModule = require('./commands/model-commands');
      code = estimateCommand(o);
    });

  program
    .command('report')
    .description("scores of a run, with 95% bootstrap intervals; --format html writes one self-contained page (charts, every task's answer, diff and log)")
    .argument('<run-dir...>', 'run directory (several: html puts them on one page, table and markdown print one after another)')
    .option('--format <format>', 'table, json, csv, markdown, official (overall_stats.json) or html', 'table')
    .option('--judge <judge>', 'strict or official (default: strict; official for imported runs)')
    .option('--subset <subset>', 'all, safe-common or safe-per-model', 'all')
    .option(
      '--subset-file <file>',
      "estimate each model's full-set scaled pass@1 from its verdicts on this subset's tasks (any run: for checking; a run of rcb run --subset uses its own)",
    )
    .option('--pset <dir>', 'html: the pset for the diffs and prompts (default: where the run read it)')
    .option('--prompt-template <file>', "html: the run's prompt template, if not a shipped one")
    .option('--baseline <file|dir>', "html: published scores beside the runs' (an overall_stats.json, or the run directory rcb import-official made of one)")
    .action(async (dirs: string[], o) => {
      code = await reportCommand(dirs, o);
    });

  program
    .command('show')
    .description("a run's tasks: the answer, the diff of the spliced file, the verdict and the test log")
    .argument('<run-dir>', 'run directory')
    .option('--paper <id>', 'only this paper')
    .option('--snippet <name>', 'only this snippet')
    .option('--model <id>', 'only this model')
    .option('--sample <i>', 'only this sample index (from 0)')
    .option('--failed', 'only tasks that did not pass the judge')
    .option('--judge <judge>', 'strict or official (default: strict; official for imported runs)')
    .option('--prompt', "also print each task's prompt")
    .option('--pset <dir>', 'the pset for the diff and prompt (default: where the run read it)')
    .option('--prompt-template <file>', "the run's prompt template, if not a shipped one")
    .action(async (dir, o) => {
      const { showCommand }: typeof ShowCommandModule = require('./commands/show-command');
      code = await showCommand(dir, o);
    });

  program
    .command('export')
    .description("a run in another tool's format: --format inspect writes one Inspect AI eval log per model (inspect view opens them)")
    .argument('<run-dir>', 'run directory')
    .requiredOption('--format <format>', 'inspect (Inspect AI eval logs, JSON)')
    .requiredOption('--out <dir>', 'folder for the logs (made if missing)')
    .option('--pset <dir>', 'the pset for the prompts and targets (default: where the run read it)')
    .option('--prompt-template <file>', "the run's prompt template, if not a shipped one")
    .action(async (dir, o) => {
      const { exportCommand }: typeof ExportCommandModule = require('./commands/export-command');
      code = await exportCommand(dir, o);
    });

  program
    .command('compare')
    .description('two runs, model by model: the paired difference B - A with its 95% interval, and the tasks that flipped')
    .argument('<run-a>', 'run directory A')
    .argument('<run-b>', 'run directory B')
    .option('--judge <judge>', 'strict or official (default: strict; official if a run was imported)')
    .option('--json', 'the comparison as JSON')
    .action(async (a, b, o) => {
      const { compareCommand }: typeof CompareCommandModule = require('./commands/compare-command');
      code = await compareCommand(a, b, o);
    });

  program
    .command('runs')
    .description('the run directories under DIR (default ./runs): spec, status and scores, newest first')
    .argument('[dir]', 'folder holding run directories, or one run directory')
    .option('--json', 'the list as JSON')
    .action(async (dir, o) => {
      const { runsCommand }: typeof RunsCommandModule = require('./commands/runs-command');
      code = await runsCommand(dir, o);
    });

  program
    .command('rejudge')
    .description("rescore a stored run with today's judge, from the evidence its verdicts keep, running no test")
    .argument('<run-dir>', 'run directory')
    .option('--format <format>', 'table, json, csv, markdown or official (overall_stats.json)', 'table')
    .option('--judge <judge>', 'strict or official (default: strict; official with --format official)')
    .option('--subset <subset>', 'all, safe-common or safe-per-model', 'all')
    .action(async (dir, o) => {
      const { rejudgeCommand }: typeof RejudgeCommandModule = require('./commands/rejudge-command');
      code = await rejudgeCommand(dir, o);
    });

  program
    .command('import-official')
    .description('load an original-harness overall_stats.json as a run')
    .argument('<file>', 'overall_stats.json')
    .requiredOption('--out <dir>', 'run directory to create')
    .action(async (file, o) => {
      code = await importOfficialCommand(file, o);
    });

  registerSubsetCommands(program, (c) => {
    code = c;
  });

  const sweep = program.command('sweep').description('many models under one budget, from a sweep file (YAML): plan, run, status, report');
  sweep
    .command('plan')
    .description('per model and in total: calls, tokens, expected and worst-case cost interactive and batch, and the time batch mode may take')
    .argument('<file>', 'sweep file')
    .action(async (file) => {
      const { sweepPlanCommand }: typeof SweepCommandsModule = require('./commands/sweep-commands');
      code = sweepPlanCommand(file);
    });
  sweep
    .command('run')
    .description('run the sweep; the same command again resumes it')
    .argument('<file>', 'sweep file')
    .option('--emulate', 'through the emulated cloud (local DynamoDB and S3, the synthesized state machine)')
    .option('--cloud', 'in the deployed stack (see rcb cloud run)')
    .option('--jobs <n>', 'tests run at once (default: one per core)')
    .option('--python <path>', 'Python interpreter for the tests')
    .option('--concurrency <n>', 'model calls in flight at once (hosted models)', '16')
    .option('--executor <kind>', 'warm or cold', 'warm')
    .option('--cancel-batches', "cancel the sweep's pending batches and keep what they answered")
    .option('--stack-name <name>', 'stack of --cloud', 'Rcb')
    .option('--region <region>', 'AWS region of --cloud')
    .option('--skip-doctor', 'with --cloud: start without checking the account first (rcb cloud doctor)')
    .addOption(new Option('--unsafe-no-sandbox', 'run tests without bubblewrap (cold executor only)'))
    .action(async (file, o) => {
      const { sweepRunCommand }: typeof SweepRunCommandModule = require('./commands/sweep-run-command');
      code = await sweepRunCommand(file, o);
    });
  sweep
    .command('status')
    .description('each run of the sweep: status, spend, and per model answered, errors, judged, spend against its budget')
    .argument('<file>', 'sweep file')
    .action(async (file) => {
      const { sweepStatusCommand }: typeof SweepCommandsModule = require('./commands/sweep-commands');
      code = await sweepStatusCommand(file);
    });
  sweep
    .command('report')
    .description("scores of the sweep's runs, in any format of rcb report")
    .argument('<file>', 'sweep file')
    .option('--format <format>', 'table, json, csv, markdown or official (overall_stats.json)', 'table')
    .option('--judge <judge>', 'strict or official (default: strict)')
    .option('--subset <subset>', 'all, safe-common or safe-per-model', 'all')
    .action(async (file, o) => {
      const { sweepReportCommand }: typeof SweepCommandsModule = require('./commands/sweep-commands');
      code = await sweepReportCommand(file, o);
    });

  // Loaded at registration, but the module defers its AWS SDK and emulator imports to its actions.
  const { registerCloudCommands }: typeof RegisterCloudCommandsModule = require('./commands/cloud/register-cloud-commands');
  registerCloudCommands(program, (c) => {
    code = c;
  });

  try {
    await program.parseAsync(argv);
  } catch (e) {
    const err = e as { code?: string; exitCode?: number };
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
    if (err.code?.startsWith('commander.')) return err.exitCode ?? 2;
    throw e;
  }
  return code;
}

endQuietlyOnClosedPipe(process.stdout);
main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError) {
      process.stderr.write(`${userMessage(e.message)}\n`);
      process.exitCode = e.exitCode;
    } else if (e instanceof StoreFileError) {
      // A damaged or foreign store: one line naming the file, not a stack trace.
      process.stderr.write(`${userMessage(`${e.message}; rcb cannot read this run directory`)}\n`);
      process.exitCode = DAMAGED_EXIT;
    } else {
      process.stderr.write(`${userMessage(`internal error: ${e instanceof Error ? e.stack : String(e)}`)}\n`);
      process.exitCode = 70;
    }
  },
);

/** --sandbox and --unsafe-no-sandbox, for the commands that run tests here. */
function addSandboxOptions(command: Command): Command {
  return command
    .option(
      '--sandbox <kind>',
      'auto (bubblewrap where it can start, else the uid sandbox as root), bwrap, uid (no namespaces: a uid per slot, seccomp; needs root) or none (default: $RCB_SANDBOX, else auto)',
    )
    .addOption(new Option('--unsafe-no-sandbox', "run tests without a sandbox, as --sandbox none (model-written code then runs with your user's rights)"));
}
