/**
 * `rcb prompts`: every task's exact prompt as JSONL, one object per task, for inspection,
 * token counting and external batch tools.
 */
import { buildPrompt, DEFAULT_TEMPLATE } from '../../core/prompt/template';
import { loadPromptTemplate, loadPsetOrFail, parseList, UsageError } from './common';

/** One line of `rcb prompts`. */
export interface PromptLine {
  paper: string;
  file: string;
  snippet: string;
  no_paper: boolean;
  prompt: string;
}

export function promptsCommand(
  opts: { pset?: string; paper?: boolean; papers?: string; promptTemplate?: string },
  write: (chunk: string) => void = (c) => process.stdout.write(c),
): number {
  const pset = loadPsetOrFail(opts.pset, parseList(opts.papers));
  const template = loadPromptTemplate(opts.promptTemplate);
  const withPaper = opts.paper !== false;
  let count = 0;
  for (const paper of pset.papers) {
    for (const snippet of paper.snippets) {
      let prompt: string;
      try {
        prompt = buildPrompt(template, paper, snippet, withPaper).text;
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      const line: PromptLine = { paper: paper.meta.id, file: snippet.file, snippet: snippet.name, no_paper: !withPaper, prompt };
      write(`${JSON.stringify(line)}\n`);
      count++;
    }
  }
  process.stderr.write(
    `${count} prompt(s) from ${pset.papers.length} paper(s), template ${opts.promptTemplate ?? DEFAULT_TEMPLATE}${withPaper ? '' : ', without the paper'}\n`,
  );
  return 0;
}
