/**
 * Sweep files: many models over one pset, each with its parameters, mode (interactive or
 * the provider's batch API) and optional budget, under one total budget. YAML, validated
 * here once; every problem names the file and the line it is on.
 *
 * ```yaml
 * pset: ../examples/pset-mini      # paths are relative to the sweep file
 * samples: 2
 * with_paper: true
 * papers: [adamlite, grouprms]     # default: all
 * prompt_template: my-template.txt
 * timeout: 60
 * budget_usd: 20                   # the whole sweep
 * models_file: my-models.yaml
 * out: sweeps/frontier             # default: sweeps/<file name>
 * batch: { poll_seconds: 60, max_rounds: 3, retry_interactively: false }
 * screening:                       # optional: every model on a subset first (docs/subsets.md)
 *   subset: subset-40.json         # written by rcb subset build for this pset
 *   keep: { threshold: 20 }        # then the full set for models whose estimated interval reaches 20 points
 *   # keep: { top: 8 }             # or for the 8 best estimates
 * models:
 *   - id: claude-sonnet-4.6
 *     mode: batch
 *     budget_usd: 8
 *   - id: gpt-4.1
 *     name: gpt-4.1-t07            # needed only to run one id twice
 *     params: { temperature: 0.7 }
 * ```
 */
import { dirname, resolve } from 'node:path';
import { basename, extname } from 'node:path';
import { LineCounter, parseDocument, isNode, type Document } from 'yaml';
import { MAX_SAMPLES, MAX_TIMEOUT_SEC, yamlData } from '../limits';
import { z } from 'zod';

export type SweepMode = 'interactive' | 'batch';

export interface SweepModel {
  /** Registry id (or oracle, empty). */
  id: string;
  /** The model's id in the sweep's run (task ids follow it): `id` unless given. */
  name: string;
  /** Registry parameters overridden for this sweep (temperature, max_output_tokens, ...). */
  params: Record<string, unknown>;
  mode: SweepMode;
  /** This model's own cap, USD, within the sweep's total; null for none. */
  budgetUsd: number | null;
  /** Line of the model's entry in the sweep file, for later messages. */
  line: number;
}

export interface SweepBatchSettings {
  /** Seconds between polls of a pending batch. */
  pollSeconds: number;
  /** Batches a task may go through (its first and resubmissions after it expired or failed in one). */
  maxRounds: number;
  /** Requests that failed or expired in a batch are asked interactively instead of in the next batch. */
  retryInteractively: boolean;
}

/**
 * A screening stage: every model runs on the subset's tasks, then only the models kept run on
 * the full set (the subset's answers are reused by task id), all within the sweep's budget.
 */
export interface SweepScreening {
  /** The subset file, absolute. */
  subset: string;
  /** Keep the models whose estimated interval's upper end reaches this many points of scaled pass@1. */
  threshold: number | null;
  /** Keep the `top` models of highest estimate. */
  top: number | null;
  /** Line of `screening` in the sweep file. */
  line: number;
}

export interface Sweep {
  /** The sweep file, absolute. */
  file: string;
  /** Absolute paths, or null for rcb's defaults. */
  pset: string | null;
  promptTemplate: string | null;
  modelsFile: string | null;
  /** The sweep's directory (its runs go below it), absolute. */
  out: string;
  samples: number;
  withPaper: boolean;
  papers: string[] | null;
  timeoutSec: number;
  budgetUsd: number | null;
  batch: SweepBatchSettings;
  /** The screening stage, or null for one run of every model on the full set. */
  screening: SweepScreening | null;
  models: SweepModel[];
}

/** A sweep file that cannot be used; `problems` are `file:line: message`, one each. */
export class SweepFileError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'SweepFileError';
  }
}

const usd = z.number().nonnegative().finite();
const name = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/, 'must be letters, digits and . _ : / @ + -');

const modelSchema = z
  .object({
    id: name,
    name: name.optional(),
    mode: z.enum(['interactive', 'batch']).default('interactive'),
    budget_usd: usd.optional(),
    params: z.record(z.unknown()).default({}),
  })
  .strict();

const sweepSchema = z
  .object({
    pset: z.string().min(1).optional(),
    prompt_template: z.string().min(1).optional(),
    models_file: z.string().min(1).optional(),
    out: z.string().min(1).optional(),
    samples: z.number().int().positive().max(MAX_SAMPLES).default(1),
    with_paper: z.boolean().default(true),
    papers: z.array(z.string().min(1)).nonempty().optional(),
    timeout: z.number().positive().max(MAX_TIMEOUT_SEC).default(60),
    budget_usd: usd.optional(),
    batch: z
      .object({
        poll_seconds: z.number().positive().default(60),
        max_rounds: z.number().int().positive().default(3),
        retry_interactively: z.boolean().default(false),
      })
      .strict()
      .default({}),
    screening: z
      .object({
        subset: z.string().min(1),
        keep: z.union([z.object({ threshold: z.number().min(0).max(100) }).strict(), z.object({ top: z.number().int().positive() }).strict()]),
      })
      .strict()
      .optional(),
    models: z.array(modelSchema).nonempty('must name at least one model'),
  })
  .strict();

/** Read a sweep file's text; `file` names it in messages and anchors its relative paths. */
export function parseSweep(file: string, text: string): Sweep {
  const abs = resolve(file);
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const lineOf = (offset: number) => lines.linePos(offset).line;
  if (doc.errors.length) throw new SweepFileError(doc.errors.map((e) => `${abs}:${lineOf(e.pos[0])}: not valid YAML: ${e.message.split('\n')[0]}`));
  const data = yamlData(doc);
  if ('error' in data) throw new SweepFileError([`${abs}:1: ${data.error}`]);
  const parsed = sweepSchema.safeParse(data.data);
  if (!parsed.success) {
    throw new SweepFileError(
      parsed.error.issues.map((i) => `${abs}:${lineAt(doc, i.path, lineOf)}: ${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`),
    );
  }
  const s = parsed.data;
  const here = dirname(abs);
  const models: SweepModel[] = s.models.map((m, i) => ({
    id: m.id,
    name: m.name ?? m.id,
    params: m.params,
    mode: m.mode,
    budgetUsd: m.budget_usd ?? null,
    line: lineAt(doc, ['models', i], lineOf),
  }));
  const problems: string[] = [];
  const seen = new Map<string, number>();
  models.forEach((m, i) => {
    const first = seen.get(m.name);
    if (first !== undefined) {
      problems.push(`${abs}:${m.line}: models.${i}: "${m.name}" is already the name of models.${first}; give one of them a distinct name`);
    } else seen.set(m.name, i);
    if (s.budget_usd !== undefined && m.budgetUsd !== null && m.budgetUsd > s.budget_usd) {
      problems.push(
        `${abs}:${lineAt(doc, ['models', i, 'budget_usd'], lineOf)}: models.${i}.budget_usd: ${m.budgetUsd} exceeds the sweep's budget_usd (${s.budget_usd})`,
      );
    }
  });
  if (s.screening && 'top' in s.screening.keep && s.screening.keep.top >= models.length) {
    problems.push(
      `${abs}:${lineAt(doc, ['screening', 'keep', 'top'], lineOf)}: screening.keep.top: ${s.screening.keep.top} keeps every one of the ${models.length} model(s); screening would only add cost`,
    );
  }
  if (problems.length) throw new SweepFileError(problems);
  return {
    file: abs,
    pset: s.pset ? resolve(here, s.pset) : null,
    promptTemplate: s.prompt_template ? resolve(here, s.prompt_template) : null,
    modelsFile: s.models_file ? resolve(here, s.models_file) : null,
    out: resolve(here, s.out ?? `sweeps/${basename(abs, extname(abs))}`),
    samples: s.samples,
    withPaper: s.with_paper,
    papers: s.papers ?? null,
    timeoutSec: s.timeout,
    budgetUsd: s.budget_usd ?? null,
    batch: { pollSeconds: s.batch.poll_seconds, maxRounds: s.batch.max_rounds, retryInteractively: s.batch.retry_interactively },
    screening: s.screening
      ? {
          subset: resolve(here, s.screening.subset),
          threshold: 'threshold' in s.screening.keep ? s.screening.keep.threshold : null,
          top: 'top' in s.screening.keep ? s.screening.keep.top : null,
          line: lineAt(doc, ['screening'], lineOf),
        }
      : null,
    models,
  };
}

/** Line of the node at `path`, or of its nearest ancestor that exists (a missing key is reported on its parent). */
function lineAt(doc: Document, path: Array<string | number>, lineOf: (offset: number) => number): number {
  for (let n = path.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
    if (isNode(node) && node.range) return lineOf(node.range[0]);
  }
  return 1;
}
