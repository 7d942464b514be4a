/** The answers the fake provider servers give (fake-batch-servers.ts), by prompt. */
import type { Pset } from '../core/types';
import { buildPrompt, type PromptTemplate } from '../core/prompt/template';
import { originalBody } from '../core/prompt/mask';

/**
 * The answer to each prompt of the pset, by snippet: its original code, a refusal, or code
 * that raises, in turn; the same book serves interactive and batch answers, so the two
 * modes score the same when they ask the same.
 */
export function answerBook(pset: Pset, template: PromptTemplate, withPaper: boolean): (prompt: string) => string {
  const book = new Map<string, string>();
  for (const paper of pset.papers) {
    paper.snippets.forEach((snippet, i) => {
      const indent = ' '.repeat(snippet.bodyIndent);
      const text = [
        `\`\`\`python\n${originalBody(snippet)}\`\`\`\n`,
        'I cannot implement this block.',
        `\`\`\`python\n${indent}raise ValueError('fake')\n\`\`\`\n`,
      ][i % 3];
      book.set(buildPrompt(template, paper, snippet, withPaper).text, text);
    });
  }
  return (prompt) => book.get(prompt) ?? 'unknown prompt';
}
