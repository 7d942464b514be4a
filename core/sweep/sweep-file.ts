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
import { didYouMean } from '../util/did-you-mean';

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

/** One problem of a sweep file: the line it is on and what is wrong there (no file name). */
export interface SweepProblem {
  line: number;
  message: string;
}

/**
 * One reading of a sweep file, which finds every problem it can at once (docs/sweeps.md):
 * the sweep when the file is valid, and the model entries valid on their own so that the
 * caller can check them against the registry in the same pass.
 */
export interface SweepReading {
  file: string;
  sweep: Sweep | null;
  /** The entries of `models` that are valid on their own (all of them when `sweep` is set). */
  models: SweepModel[];
  /** `models_file`, absolute, when it is a usable path (even if the rest of the file is not). */
  modelsFile: string | null;
  problems: SweepProblem[];
}

/** `file:line: message` for each problem, in the order of their lines. */
export function formatSweepProblems(file: string, problems: SweepProblem[]): string[] {
  return [...problems].sort((a, b) => a.line - b.line).map((p) => `${file}:${p.line}: ${p.message}`);
}

/** Read a sweep file's text; `file` names it in messages and anchors its relative paths. */
export function parseSweep(file: string, text: string): Sweep {
  const reading = readSweepText(file, text);
  if (reading.problems.length || !reading.sweep) throw new SweepFileError(formatSweepProblems(reading.file, reading.problems));
  return reading.sweep;
}

type LineAt = (path: Array<string | number>) => number;

/** Every problem of the file's text, and what of it can be used. */
export function readSweepText(file: string, text: string): SweepReading {
  const abs = resolve(file);
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const lineOf = (offset: number) => lines.linePos(offset).line;
  const at: LineAt = (path) => lineAt(doc, path, lineOf);
  const none = { file: abs, sweep: null, models: [], modelsFile: null };
  if (doc.errors.length) {
    return { ...none, problems: doc.errors.map((e) => ({ line: lineOf(e.pos[0]), message: `not valid YAML: ${e.message.split('\n')[0]}` })) };
  }
  const data = yamlData(doc);
  if ('error' in data) return { ...none, problems: [{ line: 1, message: data.error }] };
  const value = data.data;
  const raw = (typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {}) as Record<string, unknown>;
  const parsed = sweepSchema.safeParse(value);
  const problems = parsed.success ? [] : parsed.error.issues.flatMap((i) => schemaProblems(i, at));
  const indexed = validModels(raw, at);
  const models = indexed.map((x) => x.model);
  const budget = usd.safeParse(raw.budget_usd);
  problems.push(...modelProblems(indexed, budget.success ? budget.data : undefined, at));
  const here = dirname(abs);
  const modelsFile = typeof raw.models_file === 'string' && raw.models_file ? resolve(here, raw.models_file) : null;
  if (!parsed.success) return { file: abs, sweep: null, models, modelsFile, problems };
  const s = parsed.data;
  if (s.screening && 'top' in s.screening.keep && s.screening.keep.top >= models.length) {
    problems.push({
      line: at(['screening', 'keep', 'top']),
      message: `screening.keep.top: ${s.screening.keep.top} keeps every one of the ${models.length} model(s); screening would only add cost`,
    });
  }
  return { file: abs, sweep: sweepOf(abs, s, models, at), models, modelsFile, problems };
}

/** A schema issue as problems, one per unknown key each on the key's own line with the nearest known key. */
function schemaProblems(issue: z.ZodIssue, at: LineAt): SweepProblem[] {
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(issue.path);
    return issue.keys.map((key) => {
      const path = [...issue.path, key];
      return { line: at(path), message: `${path.join('.')}: unknown key${didYouMean(key, known)}${known.length ? ` (keys: ${known.join(', ')})` : ''}` };
    });
  }
  return [{ line: at(issue.path), message: `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}` }];
}

/** The keys the schema accepts at an object's path (numbers are array indices), or none when it is not one object. */
function knownKeys(path: Array<string | number>): string[] {
  let schema: z.ZodTypeAny = sweepSchema;
  const unwrap = (t: z.ZodTypeAny): z.ZodTypeAny =>
    t instanceof z.ZodDefault || t instanceof z.ZodOptional ? unwrap(t instanceof z.ZodDefault ? t._def.innerType : t.unwrap()) : t;
  for (const step of path) {
    schema = unwrap(schema);
    if (typeof step === 'number' && schema instanceof z.ZodArray) schema = schema.element;
    else if (typeof step === 'string' && schema instanceof z.ZodObject) schema = (schema.shape as Record<string, z.ZodTypeAny>)[step];
    else return [];
    if (!schema) return [];
  }
  schema = unwrap(schema);
  return schema instanceof z.ZodObject ? Object.keys(schema.shape as object) : [];
}

/** The entries of `models` that are valid on their own, with their index in the file's list. */
function validModels(raw: Record<string, unknown>, at: LineAt): Array<{ index: number; model: SweepModel }> {
  if (!Array.isArray(raw.models)) return [];
  return raw.models.flatMap((entry, i) => {
    const m = modelSchema.safeParse(entry);
    if (!m.success) return [];
    const d = m.data;
    const model = { id: d.id, name: d.name ?? d.id, params: d.params, mode: d.mode, budgetUsd: d.budget_usd ?? null, line: at(['models', i]) };
    return [{ index: i, model }];
  });
}

/** Names given twice, and model budgets above the sweep's. */
function modelProblems(models: Array<{ index: number; model: SweepModel }>, total: number | undefined, at: LineAt): SweepProblem[] {
  const problems: SweepProblem[] = [];
  const seen = new Map<string, number>();
  for (const { index: i, model: m } of models) {
    const first = seen.get(m.name);
    if (first !== undefined) {
      problems.push({ line: m.line, message: `models.${i}: "${m.name}" is already the name of models.${first}; give one of them a distinct name` });
    } else seen.set(m.name, i);
    if (total !== undefined && m.budgetUsd !== null && m.budgetUsd > total) {
      problems.push({ line: at(['models', i, 'budget_usd']), message: `models.${i}.budget_usd: ${m.budgetUsd} exceeds the sweep's budget_usd (${total})` });
    }
  }
  return problems;
}

function sweepOf(abs: string, s: z.infer<typeof sweepSchema>, models: SweepModel[], at: LineAt): Sweep {
  const here = dirname(abs);
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
          line: at(['screening']),
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
