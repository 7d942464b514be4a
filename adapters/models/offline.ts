/**
 * Offline models: no network, no keys, no cost. `oracle` answers with the snippet's original
 * body (a valid pset must pass every task with it), `empty` answers without a code block,
 * `replay:FILE` answers from recorded completions.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { MAX_REPLAY_BYTES } from '../../core/limits';
import { InputError } from '../../core/input-error';
import { z } from 'zod';
import type { Pset } from '../../core/types';
import type { ModelClient, ModelRequest, ModelResponse } from '../../core/model';
import { ModelError } from '../../core/model';
import { findSnippet, originalBody } from '../../core/prompt/mask';

const NO_USAGE = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 };

function answer(text: string): ModelResponse {
  return { text, usage: NO_USAGE, finishReason: 'stop' };
}

export class OracleModel implements ModelClient {
  readonly id = 'oracle';
  readonly params = {};
  readonly offline = true;
  constructor(private readonly pset: Pset) {}

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const paper = this.pset.papers.find((p) => p.meta.id === req.task.paper);
    if (!paper) throw new ModelError('bad_request', `oracle: no paper "${req.task.paper}" in the pset`);
    const snippet = findSnippet(paper, req.task.snippet, req.task.file);
    return answer(`\`\`\`python\n${originalBody(snippet)}\`\`\`\n`);
  }
}

export class EmptyModel implements ModelClient {
  readonly id = 'empty';
  readonly params = {};
  readonly offline = true;

  async complete(): Promise<ModelResponse> {
    return answer('I cannot implement this block.');
  }
}

const ReplayLine = z.object({
  paper: z.string().min(1),
  snippet: z.string().min(1),
  file: z.string().optional(),
  model: z.string().min(1),
  sample: z.number().int().nonnegative(),
  completion: z.string(),
});
export type ReplayLine = z.infer<typeof ReplayLine>;

/**
 * A replay file's text, refused past MAX_REPLAY_BYTES naming the file: past 512 MB Node
 * cannot even hold it as one string, and the error it gives names nothing.
 */
export function readReplayText(path: string): string {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (e) {
    throw new InputError(`${path}: cannot read the replay file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  if (size > MAX_REPLAY_BYTES) {
    throw new InputError(
      `${path}: the replay file is ${(size / 2 ** 20).toFixed(0)} MB, more than the ${MAX_REPLAY_BYTES / 2 ** 20} MB rcb reads (split it by model)`,
    );
  }
  return readFileSync(path, 'utf8');
}

/** Read a replay JSONL file; errors name the file and line. */
export function readReplayFile(path: string): ReplayLine[] {
  const lines: ReplayLine[] = [];
  readReplayText(path)
    .split('\n')
    .forEach((text, i) => {
      if (text.trim() === '') return;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (e) {
        throw new Error(`${path}:${i + 1}: not JSON (${(e as Error).message})`);
      }
      const parsed = ReplayLine.safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new Error(`${path}:${i + 1}: ${issue.path.join('.') || 'line'}: ${issue.message}`);
      }
      lines.push(parsed.data);
    });
  return lines;
}

/** Answers recorded for one model, keyed by paper, snippet (and file when given) and sample. */
export class ReplayModel implements ModelClient {
  readonly offline = true;
  readonly params: Record<string, unknown>;
  private readonly answers = new Map<string, string>();

  constructor(
    readonly id: string,
    lines: ReplayLine[],
    source: string,
  ) {
    // The replayed answers are the model's parameters as far as identity goes: a changed
    // file must not reuse completions cached from the old one.
    this.params = { replay: source };
    for (const l of lines) {
      this.answers.set(ReplayModel.key(l.paper, l.snippet, l.sample, l.file), l.completion);
    }
  }

  private static key(paper: string, snippet: string, sample: number, file?: string): string {
    return JSON.stringify([paper, snippet, sample, file ?? null]);
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const { paper, snippet, file } = req.task;
    const text = this.answers.get(ReplayModel.key(paper, snippet, req.sample, file)) ?? this.answers.get(ReplayModel.key(paper, snippet, req.sample));
    if (text === undefined) {
      throw new ModelError('bad_request', `replay: no answer for ${paper}/${snippet} sample ${req.sample} of model "${this.id}"`);
    }
    return answer(text);
  }
}

/** One client per model named in a replay file. */
export function replayModels(path: string): ReplayModel[] {
  const lines = readReplayFile(path);
  const digest = createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 16);
  const byModel = new Map<string, ReplayLine[]>();
  for (const l of lines) {
    const list = byModel.get(l.model);
    if (list) list.push(l);
    else byModel.set(l.model, [l]);
  }
  if (!byModel.size) throw new Error(`${path}: the replay file has no answers`);
  return [...byModel].map(([model, ls]) => new ReplayModel(model, ls, digest));
}
