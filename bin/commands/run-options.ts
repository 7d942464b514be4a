/**
 * The flags that define a run: what resolveRun (resolve-run.ts) reads to build the run spec
 * and so the run id. `rcb run` and `rcb cloud run` both declare them here, so that the same
 * flags give the same run on this machine and in the cloud.
 */
import { Option, type Command } from 'commander';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Per-command wording of the flags whose meaning differs a little between the two commands. */
export interface RunSpecHelp {
  model?: string;
  budget?: string;
}

export function addRunSpecOptions(command: Command, help: RunSpecHelp = {}): Command {
  return command
    .option('--pset <dir>', 'pset folder (default: the bundled example)')
    .addOption(
      new Option('--model <id>', help.model ?? 'model: oracle, empty, replay:FILE or a registry id (repeatable)').argParser(collect).default([], 'oracle'),
    )
    .option('--samples <n>', 'completions per task', '1')
    .option('--temperature <t>', 'sampling temperature for hosted models')
    .option('--no-paper', 'leave the paper text out of prompts')
    .option('--papers <ids>', 'only these papers, comma-separated')
    .option('--timeout <seconds>', 'time limit of one test run', '60')
    .option('--prompt-template <name|file>', "prompt template: original (the default: the original harness's prompt, byte for byte), rcb, or a template file")
    .option('--budget <usd>', help.budget ?? 'hard cap on model spend for the run, USD');
}
