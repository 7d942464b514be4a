/**
 * A local model endpoint in the OpenAI Chat Completions wire format, for crash trials: it
 * knows every prompt of a pset and answers each with a fixed completion (the snippet's own
 * code, a refusal with no code, or code that raises, by snippet), after 20-50 ms. It counts
 * the calls it receives and the answers it finishes sending, per prompt, and can be frozen:
 * from then on nothing more is answered (the runner it served has been killed).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pset } from '../../core/types';
import type { PromptTemplate } from '../../core/prompt/template';
import { buildPrompt } from '../../core/prompt/template';
import { originalBody } from '../../core/prompt/mask';

/** A task's prompt, named as the run store names its tasks. */
export const promptKey = (paper: string, file: string, snippet: string): string => `${paper}/${file}/${snippet}`;

export interface CallCounts {
  /** Requests received, by prompt key. */
  received: Map<string, number>;
  /** Answers whose response was written in full before the endpoint was frozen, by prompt key. */
  answered: Map<string, number>;
}

export class FakeChatEndpoint {
  private readonly server: Server = createServer();
  /** Prompt text -> [prompt key, answer]. */
  private readonly answers = new Map<string, [string, string]>();
  private counts: CallCounts = { received: new Map(), answered: new Map() };
  private frozen = false;
  private readonly pending = new Set<ServerResponse>();
  /** Requests whose prompt is not one of the pset's (must stay 0). */
  unknownPrompts = 0;
  /** Called on each request received, with the number received since the last reset. */
  onRequest?: (receivedSoFar: number) => void;
  url = '';

  constructor(pset: Pset, template: PromptTemplate, withPaper: boolean) {
    for (const paper of pset.papers) {
      paper.snippets.forEach((snippet, i) => {
        const indent = ' '.repeat(snippet.bodyIndent);
        const answer = [
          `\`\`\`python\n${originalBody(snippet)}\`\`\`\n`,
          'I cannot implement this block.',
          `\`\`\`python\n${indent}raise ValueError('fake endpoint')\n\`\`\`\n`,
        ][i % 3];
        this.answers.set(buildPrompt(template, paper, snippet, withPaper).text, [promptKey(paper.meta.id, snippet.file, snippet.name), answer]);
      });
    }
  }

  async start(): Promise<void> {
    this.server.on('request', (req, res) => {
      // Decoded by the stream: a chunk boundary may fall inside a UTF-8 character (the papers'
      // text has some), which decoding chunk by chunk would turn into U+FFFD.
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        if (this.frozen) return void res.destroy();
        const prompt = (JSON.parse(body) as { messages: { content: string }[] }).messages[0]?.content ?? '';
        const hit = this.answers.get(prompt);
        if (!hit) {
          this.unknownPrompts++;
          res.writeHead(400, { 'content-type': 'application/json' });
          return void res.end(JSON.stringify({ error: { message: 'unknown prompt', type: 'invalid_request_error' } }));
        }
        const [key, answer] = hit;
        const counts = this.counts;
        counts.received.set(key, (counts.received.get(key) ?? 0) + 1);
        this.pending.add(res);
        this.onRequest?.([...counts.received.values()].reduce((a, b) => a + b, 0));
        setTimeout(
          () => {
            this.pending.delete(res);
            if (this.frozen || counts !== this.counts) return void res.destroy();
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(
              JSON.stringify({
                id: 'chatcmpl-fake',
                object: 'chat.completion',
                created: 0,
                model: 'fake-chat',
                choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
                usage: { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 },
              }),
            );
            counts.answered.set(key, (counts.answered.get(key) ?? 0) + 1);
          },
          20 + Math.random() * 30,
        );
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Stop answering: requests in flight and later ones get no answer. */
  freeze(): void {
    this.frozen = true;
    for (const res of this.pending) res.destroy();
    this.pending.clear();
  }

  /** New counts (and answering again) for the next run; returns the counts of the last one. */
  reset(): CallCounts {
    const last = this.counts;
    this.counts = { received: new Map(), answered: new Map() };
    this.frozen = false;
    this.onRequest = undefined;
    return last;
  }

  async close(): Promise<void> {
    this.freeze();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
