/**
 * The environment check of an evaluation shard: before judging its paper, a shard checks that
 * the paper's oracle passes in the image it runs in (core/run/env-check.ts, the check `rcb run`
 * and `rcb doctor` make), so that a paper whose imports fail in the image has its tasks
 * reported env_broken (out of the scores, named in status and reports) instead of scoring 0%
 * for every model.
 *
 * The result is kept per image (its digest and interpreter) and paper digest in the store, so
 * a paper is checked once per image, not once per shard: the first shard of the paper takes a
 * lease on the check and runs it; the others wait for its result (or, once the lease has run
 * out with no result, take it over). A shard whose image digest is unknown (not on ECS, the
 * metadata endpoint unreachable) checks its paper itself and stores nothing under an image.
 */
import type { Pset } from '../types';
import type { TestExecutor } from '../executor';
import type { PaperEnvironment } from '../records';
import { checkEnvironment, type EnvironmentCache } from '../run/env-check';
import type { EnvironmentChecks } from './ports';

export interface ShardEnvironmentDeps {
  executor: TestExecutor;
  checks: EnvironmentChecks;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

export interface ShardEnvironmentInput {
  runId: string;
  pset: Pset;
  paper: string;
  /** `<image digest>@<python>`, or null when the image's digest is unknown. */
  image: string | null;
  /** The interpreter the tests run with (recorded when the image is unknown). */
  python: string;
  /** Unique per shard run (the claim's owner). */
  owner: string;
  /** How long a claim holds off other shards: the check's own time limit and some. */
  leaseMs: number;
  /** Pause between reads of a check another shard runs. @default 1000 */
  pollMs?: number;
}

export interface ShardEnvironment {
  result: PaperEnvironment;
  /** This shard ran the paper's oracle (false: the image's stored check answered). */
  ran: boolean;
}

/** The check could not run (an executor failure): an infrastructure failure, for the shard's retry. */
export class EnvironmentCheckFailedError extends Error {
  constructor(
    readonly paper: string,
    reason: string,
  ) {
    super(`environment check of paper ${paper} could not run: ${reason}`);
    this.name = 'EnvironmentCheckFailedError';
  }
}

/** The paper's environment in this shard's image: stored, awaited from another shard, or checked now. */
export async function checkShardEnvironment(deps: ShardEnvironmentDeps, input: ShardEnvironmentInput): Promise<ShardEnvironment> {
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const paper = input.pset.papers.find((p) => p.meta.id === input.paper);
  if (!paper) throw new Error(`environment check: paper ${input.paper} is not in the run's pset`);
  const onePaper: Pset = { ...input.pset, papers: [paper] };

  let result: ShardEnvironment;
  if (input.image === null) {
    let judged = false;
    const nothingKept: EnvironmentCache = { get: () => null, put: () => void (judged = true) };
    const [checked] = await checkEnvironment({ executor: deps.executor, cache: nothingKept }, { pset: onePaper, interpreter: input.python });
    if (!judged) throw new EnvironmentCheckFailedError(input.paper, checked.reason ?? 'no result');
    result = { result: checked, ran: true };
  } else {
    result = await checkOncePerImage(deps, input, onePaper, input.image, now, sleep);
  }
  await deps.checks.putRunPaperEnvironment(input.runId, { ...result.result, image: input.image ?? input.python, checkedAt: now().toISOString() });
  return result;
}

async function checkOncePerImage(
  deps: ShardEnvironmentDeps,
  input: ShardEnvironmentInput,
  onePaper: Pset,
  image: string,
  now: () => Date,
  sleep: (ms: number) => Promise<void>,
): Promise<ShardEnvironment> {
  const digest = onePaper.papers[0].digest;
  const pollMs = input.pollMs ?? 1000;
  let found = false;
  let stored = false;
  // checkEnvironment reads the image's check first and stores what it ran (not an executor failure).
  const cache: EnvironmentCache = {
    get: async (paperDigest) => {
      const known = await deps.checks.getImageCheck(image, paperDigest);
      found = known !== null;
      return known;
    },
    put: async (paperDigest, _image, result) => {
      stored = true;
      await deps.checks.putImageCheck(image, paperDigest, result);
    },
  };
  const started = now().getTime();
  for (;;) {
    const known = await deps.checks.getImageCheck(image, digest);
    if (known) return { result: { ...known, paper: input.paper }, ran: false };
    // Past twice the lease with neither a result nor the claim: check without waiting any longer.
    const overdue = now().getTime() - started > 2 * input.leaseMs;
    if (overdue || (await deps.checks.claimImageCheck(image, digest, input.owner, input.leaseMs))) {
      const [checked] = await checkEnvironment({ executor: deps.executor, cache }, { pset: onePaper, interpreter: image });
      // Neither found nor stored: the executor failed, which says nothing of the image.
      if (!found && !stored) throw new EnvironmentCheckFailedError(input.paper, checked.reason ?? 'no result');
      return { result: checked, ran: !found };
    }
    await sleep(pollMs);
  }
}
