/**
 * `rcb subset build` and `rcb subset check`: a small calibrated subset of the tasks, chosen and
 * fitted from imported results files (overall_stats.json), and its leave-one-model-out check.
 * The method is in core/subset/ and docs/subsets.md.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { importOverallStats } from '../../core/report/official';
import { checkSubsets, formatCheck } from '../../core/subset/check';
import { checkHoldout, formatHoldout, parseHoldout } from '../../core/subset/holdout';
import { assertMatrixOfPset, verdictMatrix, type VerdictMatrix } from '../../core/subset/matrix';
import { assertSubsetFitsPset, buildSubset, parseSubsetFile, serializeSubset } from '../../core/subset/subset-file';
import { defaultPsetDir, loadPsetOrFail, UsageError } from './common';
import { writeFileAtomic } from '../../app/output-files';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `--official FILE...` read as one verdict matrix; errors name the file. */
function readOfficial(files: string[], exclude: string[]): VerdictMatrix {
  if (!files.length) throw new UsageError('--official FILE is required (an overall_stats.json; repeat the flag for several)');
  const inputs = files.map((file) => {
    const path = resolve(file);
    if (!existsSync(path)) throw new UsageError(`--official ${path} does not exist`);
    try {
      return { source: path, imported: importOverallStats(readFileSync(path, 'utf8'), path) };
    } catch (e) {
      throw new UsageError(`--official ${(e as Error).message}`);
    }
  });
  try {
    return verdictMatrix(inputs, exclude);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

function parseSeed(value: string | undefined): number {
  if (value === undefined) return 0;
  if (!/^\d+$/.test(value) || Number(value) > 0xffffffff) throw new UsageError(`--seed ${value}: must be an integer from 0 to ${0xffffffff}`);
  return Number(value);
}

function parseSizes(value: string, tasks: number): number[] {
  const sizes = value.split(',').map((s) => s.trim());
  return sizes.map((s) => {
    if (!/^\d+$/.test(s) || Number(s) < 1 || Number(s) > tasks)
      throw new UsageError(`--size ${value}: each size must be an integer from 1 to the ${tasks} tasks of the verdicts`);
    return Number(s);
  });
}

export interface SubsetBuildOptions {
  official: string[];
  size: string;
  excludeModel: string[];
  seed?: string;
  pset?: string;
  out: string;
}

export function subsetBuildCommand(opts: SubsetBuildOptions): number {
  const m = readOfficial(opts.official, opts.excludeModel);
  if (opts.size.includes(',')) throw new UsageError(`--size ${opts.size}: build takes one size`);
  const [size] = parseSizes(opts.size, m.tasks.length);
  if (m.models.length < 3)
    throw new UsageError(`--official: ${m.models.length} model(s) left to fit on; a subset needs at least 3 (to calibrate its interval)`);
  const seed = parseSeed(opts.seed);
  const sources = opts.official.map((f) => resolve(f)).join(', ');
  // The pset the verdicts were made on: its digest, over the verdicts' papers, is what a run of
  // those papers records, so a subset is refused for any other pset.
  const papers = [...new Set(m.tasks.map((t) => t.paper))];
  const psetRoot = resolve(opts.pset ?? defaultPsetDir());
  const whole = loadPsetOrFail(psetRoot);
  try {
    assertMatrixOfPset(m, whole, sources);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const pset = papers.length === whole.papers.length ? whole : loadPsetOrFail(psetRoot, papers);
  process.stderr.write(
    `fitting on ${m.models.length} models, ${m.tasks.length} tasks; calibrating the interval over the ${m.models.length} models left out in turn\n`,
  );
  const subset = buildSubset(m, { digest: pset.digest, papers }, size, { seed, excludedModels: opts.excludeModel });
  const out = resolve(opts.out);
  mkdirSync(dirname(out), { recursive: true });
  // Written whole or not at all: a reader never sees half a subset file.
  writeFileAtomic(out, serializeSubset(subset), '--out');
  const loc = subset.tasks.reduce((s, t) => s + t.loc, 0);
  const totalLoc = subset.items.reduce((s, t) => s + t.loc, 0);
  process.stderr.write(
    `wrote ${out}: ${subset.size} of ${subset.items.length} tasks (${loc} of ${totalLoc} LoC), fitted on ${subset.models.length} models, interval ×${subset.method.inflation.toFixed(2)}; sha256 ${createHash('sha256').update(serializeSubset(subset)).digest('hex').slice(0, 12)}\n`,
  );
  return 0;
}

export interface SubsetCheckOptions {
  official: string[];
  size: string;
  excludeModel: string[];
  seed?: string;
  randomSeeds: string;
  json?: boolean;
  /** `strongest:N` or `newest:N` (by knowledge cutoff): hold those models out together. */
  holdout?: string;
}

/** Each model's knowledge cutoff, from the files' llm_cfg. */
function cutoffsOf(files: string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const file of files) {
    const { run } = importOverallStats(readFileSync(resolve(file), 'utf8'), resolve(file));
    for (const [id, info] of Object.entries(run.models)) out[id] ??= info.knowledgeCutoff;
  }
  return out;
}

function holdoutCommand(opts: SubsetCheckOptions, m: VerdictMatrix, sizes: number[]): number {
  let spec;
  try {
    spec = parseHoldout(opts.holdout!);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const cutoffs = spec.kind === 'newest' ? cutoffsOf(opts.official) : {};
  const checks = sizes.map((size) => {
    try {
      return checkHoldout(m, spec, size, parseSeed(opts.seed), cutoffs);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  });
  process.stdout.write(opts.json ? `${JSON.stringify(checks, null, 2)}\n` : checks.map(formatHoldout).join('\n'));
  return 0;
}

export function subsetCheckCommand(opts: SubsetCheckOptions): number {
  const m = readOfficial(opts.official, opts.excludeModel);
  if (opts.holdout !== undefined) return holdoutCommand(opts, m, parseSizes(opts.size, m.tasks.length));
  const sizes = parseSizes(opts.size, m.tasks.length);
  if (m.models.length < 4)
    throw new UsageError(`--official: ${m.models.length} model(s); leave-one-model-out needs at least 4 (3 to fit and calibrate on, 1 held out)`);
  const randomSeeds = Number(opts.randomSeeds);
  if (!Number.isInteger(randomSeeds) || randomSeeds < 1) throw new UsageError(`--random-seeds ${opts.randomSeeds}: must be a positive integer`);
  const progress = process.stderr.isTTY
    ? (done: number, total: number) => process.stderr.write(`\rheld out ${done}/${total}${done === total ? '\n' : ''}`)
    : undefined;
  const results = checkSubsets(m, { sizes, seed: parseSeed(opts.seed), randomSeeds, onProgress: progress });
  const sources = [...new Set(m.sourceOf.values())].join(', ');
  const about = { sources, models: m.models.length, tasks: m.tasks.length, loc: m.tasks.reduce((s, t) => s + t.loc, 0) };
  process.stdout.write(opts.json ? `${JSON.stringify({ ...about, sizes: results }, null, 2)}\n` : formatCheck(results, about));
  return 0;
}

export interface SubsetShowOptions {
  pset?: string;
  json?: boolean;
}

/** A subset file, read and checked against the pset it will run on: its tasks and what it was fitted on. */
export function subsetShowCommand(file: string, opts: SubsetShowOptions): number {
  const path = resolve(file);
  if (!existsSync(path)) throw new UsageError(`subset file ${path} does not exist`);
  let subset;
  try {
    subset = parseSubsetFile(readFileSync(path, 'utf8'), path);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const whole = loadPsetOrFail(opts.pset);
  const have = new Set(whole.papers.map((p) => p.meta.id));
  const lacking = subset.pset.papers.filter((p) => !have.has(p));
  if (lacking.length) {
    const list = lacking.length > 5 ? `${lacking.slice(0, 5).join(', ')} and ${lacking.length - 5} more` : lacking.join(', ');
    throw new UsageError(
      `${path}: made for ${subset.pset.papers.length} papers; the pset at ${whole.root} lacks ${lacking.length} of them (${list}); --pset names the pset the subset is for`,
    );
  }
  const pset = subset.pset.papers.length === whole.papers.length ? whole : loadPsetOrFail(opts.pset, subset.pset.papers);
  try {
    assertSubsetFitsPset(subset, pset, path);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(subset, null, 2)}\n`);
    return 0;
  }
  const loc = subset.tasks.reduce((s, t) => s + t.loc, 0);
  const totalLoc = subset.items.reduce((s, t) => s + t.loc, 0);
  const lines = [
    `${path}: ${subset.size} of ${subset.items.length} tasks (${loc} of ${totalLoc} LoC, ${((100 * loc) / totalLoc).toFixed(1)}%) of the pset at ${pset.root}`,
    `method ${subset.method.name}, prior sd ${subset.method.priorSd}, 95% interval ×${subset.method.inflation.toFixed(2)} (calibrated), seed ${subset.method.seed}`,
    `fitted on ${subset.models.length} models${subset.excludedModels.length ? ` (excluded: ${subset.excludedModels.join(', ')})` : ''}`,
    '',
    ...subset.tasks.map((t) => `  ${t.paper.padEnd(30)} ${t.snippet.padEnd(44)} ${String(t.loc).padStart(4)} LoC`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

/** The `rcb subset` commands on `program`; `done` receives each command's exit code. */
export function registerSubsetCommands(program: Command, done: (code: number) => void): void {
  const subset = program
    .command('subset')
    .description('screen models on a small calibrated subset of the tasks, fitted from published verdicts (docs/subsets.md)');
  subset
    .command('build')
    .description('choose N tasks and fit the estimator of the full-set scaled pass@1 from imported verdicts; writes the subset file')
    .requiredOption('--official <file>', 'overall_stats.json with the verdicts to fit on (repeat for several)', collect, [])
    .requiredOption('--size <n>', 'number of tasks to choose')
    .option('--exclude-model <id>', 'leave this model out of the choice and the fit (repeat for several)', collect, [])
    .option('--seed <n>', 'seed of the tie-break between equally informative tasks', '0')
    .option('--pset <dir>', 'the pset the verdicts were made on (default: the bundled example)')
    .requiredOption('--out <file>', 'subset file to write (JSON)')
    .action((o: SubsetBuildOptions) => done(subsetBuildCommand(o)));
  subset
    .command('check')
    .description('leave-one-model-out check of the method: MAE, max error, interval coverage, against random subsets of the same size')
    .requiredOption('--official <file>', 'overall_stats.json (repeat for several)', collect, [])
    .requiredOption('--size <n>', 'subset size, or several comma-separated (20,40,60)')
    .option('--exclude-model <id>', 'leave this model out of the check altogether (repeat for several)', collect, [])
    .option('--seed <n>', 'seed of the tie-break and of the random subsets', '0')
    .option('--random-seeds <n>', 'random subsets drawn per held-out model', '10')
    .option('--json', 'the check as JSON, every held-out model included')
    .option('--holdout <split>', 'strongest:N or newest:N (by knowledge cutoff): hold those models out together, fit on the rest, estimate them')
    .action((o: SubsetCheckOptions) => done(subsetCheckCommand(o)));
  subset
    .command('show')
    .description('a subset file, checked against the pset it is for: its tasks, method and the models it was fitted on')
    .argument('<file>', 'subset file')
    .option('--pset <dir>', 'the pset to check it against (default: the bundled example)')
    .option('--json', 'the subset file as read')
    .action((file: string, o: SubsetShowOptions) => done(subsetShowCommand(file, o)));
}
