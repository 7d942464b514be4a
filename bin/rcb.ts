#!/usr/bin/env node
/**
 * The rcb command line. Each command parses its flags, builds adapters and calls one use
 * case; errors the user can act on are printed without a stack trace.
 */
import { Command, Option } from 'commander';
import { UsageError } from './commands/common';
import { addRunSpecOptions } from './commands/run-options';
import { validateCommand, tasksCommand, promptCommand } from './commands/pset-commands';
import { reportCommand, importOfficialCommand } from './commands/report-commands';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

async function main(argv: string[]): Promise<number> {
  let code = 0;
  const program = new Command()
    .name('rcb')
    .description('Run the ResearchCodeBench benchmark: models fill in masked code from ML papers, the papers\' own tests judge it.')
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
    .option('--no-paper', 'leave the paper text out (the paper\'s ablation)')
    .option('--prompt-template <file>', 'prompt template to use instead of the shipped one')
    .action((paper, snippet, o) => {
      code = promptCommand(paper, snippet, o);
    });

  addRunSpecOptions(program.command('run').description('run the benchmark on this machine; rerunning the same command resumes it'))
    .option('--jobs <n>', 'tests run at once (default: one per core)')
    .option('--python <path>', 'Python interpreter for the tests (default: $RCB_PYTHON, /usr/bin/python3, python3)')
    .option('--out <dir>', 'run directory (default: runs/<models>-<run id>, derived from the run spec)')
    .option('--concurrency <n>', 'model calls in flight at once (hosted models)', '16')
    .option('--models-file <file>', 'model registry entries merged over the shipped resources/models.yaml')
    .option('--executor <kind>', 'warm (a pre-imported Python per worker, forked per test) or cold (a fresh interpreter per test)', 'warm')
    .addOption(new Option('--unsafe-no-sandbox', 'run tests without bubblewrap (model-written code then runs with your user\'s rights)'))
    .option('--batch', 'send every hosted model\'s tasks through its provider\'s batch API (about half price, answers within 24 h); rerun to collect pending batches')
    .option('--batch-poll <seconds>', 'seconds between polls of pending batches (--batch)', '60')
    .option('--cancel-batches', 'with --batch: cancel the run\'s pending batches, keep what they answered')
    .action(async (o) => {
      // Loaded on use: the run's adapters are heavier than what the pset commands need.
      const { runCommand } = require('./commands/run-command') as typeof import('./commands/run-command');
      const { hostedModels } = require('./commands/model-commands') as typeof import('./commands/model-commands');
      code = await runCommand(o, hostedModels(o.modelsFile));
    });

  program
    .command('models')
    .description('list the model registry (shipped resources/models.yaml, merged with --models-file)')
    .option('--models-file <file>', 'registry entries merged over the shipped ones, by id')
    .action((o) => {
      const { modelsCommand } = require('./commands/model-commands') as typeof import('./commands/model-commands');
      code = modelsCommand(o);
    });

  program
    .command('estimate')
    .description('calls, input tokens and expected cost of a run with hosted models, before paying for it')
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .option('--model <id>', 'registry model id (repeatable)', collect, [])
    .option('--samples <n>', 'completions per task', '1')
    .option('--temperature <t>', 'sampling temperature')
    .option('--no-paper', 'leave the paper text out of prompts')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .option('--prompt-template <file>', 'prompt template to use instead of the shipped one')
    .option('--budget <usd>', 'compare the estimate with this budget')
    .option('--models-file <file>', 'registry entries merged over the shipped ones, by id')
    .action((o) => {
      const { estimateCommand } = require('./commands/model-commands') as typeof import('./commands/model-commands');
      code = estimateCommand(o);
    });

  program
    .command('report')
    .description('scores of a run')
    .argument('<run-dir>', 'run directory')
    .option('--format <format>', 'table, json, csv, markdown or official (overall_stats.json)', 'table')
    .option('--judge <judge>', 'strict or official (default: strict; official for imported runs)')
    .option('--subset <subset>', 'all, safe-common or safe-per-model', 'all')
    .action(async (dir, o) => {
      code = await reportCommand(dir, o);
    });

  program
    .command('import-official')
    .description('load an original-harness overall_stats.json as a run')
    .argument('<file>', 'overall_stats.json')
    .requiredOption('--out <dir>', 'run directory to create')
    .action(async (file, o) => {
      code = await importOfficialCommand(file, o);
    });

  const sweep = program.command('sweep').description('many models under one budget, from a sweep file (YAML): plan, run, status, report');
  sweep
    .command('plan')
    .description('per model and in total: calls, tokens, expected and worst-case cost interactive and batch, and the time batch mode may take')
    .argument('<file>', 'sweep file')
    .action((file) => {
      const { sweepPlanCommand } = require('./commands/sweep-commands') as typeof import('./commands/sweep-commands');
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
    .option('--cancel-batches', 'cancel the sweep\'s pending batches and keep what they answered')
    .option('--stack-name <name>', 'stack of --cloud', 'Rcb')
    .option('--region <region>', 'AWS region of --cloud')
    .addOption(new Option('--unsafe-no-sandbox', 'run tests without bubblewrap (cold executor only)'))
    .action(async (file, o) => {
      const { sweepRunCommand } = require('./commands/sweep-run-command') as typeof import('./commands/sweep-run-command');
      code = await sweepRunCommand(file, o);
    });
  sweep
    .command('status')
    .description('each run of the sweep: status, spend, and per model answered, errors, judged, spend against its budget')
    .argument('<file>', 'sweep file')
    .action(async (file) => {
      const { sweepStatusCommand } = require('./commands/sweep-commands') as typeof import('./commands/sweep-commands');
      code = await sweepStatusCommand(file);
    });
  sweep
    .command('report')
    .description('scores of the sweep\'s runs, in any format of rcb report')
    .argument('<file>', 'sweep file')
    .option('--format <format>', 'table, json, csv, markdown or official (overall_stats.json)', 'table')
    .option('--judge <judge>', 'strict or official (default: strict)')
    .option('--subset <subset>', 'all, safe-common or safe-per-model', 'all')
    .action(async (file, o) => {
      const { sweepReportCommand } = require('./commands/sweep-commands') as typeof import('./commands/sweep-commands');
      code = await sweepReportCommand(file, o);
    });

  // Loaded at registration, but the module defers its AWS SDK and emulator imports to its actions.
  const { registerCloudCommands } = require('./commands/cloud-commands') as typeof import('./commands/cloud-commands');
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

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError) {
      process.stderr.write(`rcb: ${e.message}\n`);
      process.exitCode = e.exitCode;
    } else {
      process.stderr.write(`rcb: internal error: ${e instanceof Error ? e.stack : String(e)}\n`);
      process.exitCode = 70;
    }
  },
);
