/**
 * The infrastructure cost of a run that has happened, from what it recorded: its shards (the
 * plan PlanRun wrote), their tests' measured durations, which of them failed every attempt,
 * the generator invocations and their durations (one per interactive answer), priced with
 * the one price table (core/cost/infra-prices.ts) through the same formulas as the estimate
 * before a run (core/cost/infra-cost.ts). A local run costs nothing in the cloud: its infra
 * line says so and adds $0. Pure arithmetic.
 *
 * What a run does not record is assumed and said: a shard's wall time (its image pull and
 * environment check from `DEFAULT_INFRA_ASSUMPTIONS`, its tests from their verdicts'
 * durations over the task's slots), and whether a shard ran on Spot or on demand (priced on
 * Spot, the cluster's default, with the on-demand total beside; a failed shard is billed on
 * both, as it tried both).
 */
import { INFRA_PRICES as P } from './infra-prices';
import { DEFAULT_INFRA_ASSUMPTIONS, DEFAULT_STACK_SIZES, estimateRunInfra, type InfraAssumptions, type InfraLine } from './infra-cost';
import type { StackSizes } from './infra-sizes';

/** One evaluation shard of a cloud run, as recorded. */
export interface RecordedShard {
  paper: string;
  /** The shard's tasks per model (a shard is one paper and model, or a slice of them). */
  tasksByModel: Record<string, number>;
  /** Seconds of its tests, the sum of its verdicts' recorded durations. */
  testSec: number;
  /** Wall seconds of the shard task, when recorded; else estimated (pull, env check, tests over the slots). */
  wallSec?: number;
  /** Where it ran, when recorded; else priced on Spot (the cluster's default). */
  capacity?: 'spot' | 'on-demand';
  /** The shard ran its paper's environment check (once per paper and image). */
  envCheckRan: boolean;
  /** It failed every attempt (its tasks are infra_error): billed once on Spot and once on demand. */
  failed?: boolean;
}

/** What a cloud run recorded of its infrastructure use. */
export interface RecordedCloudRun {
  where: 'cloud';
  shards: RecordedShard[];
  /** Per model: generator invocations (interactive answers, each attempt) and their seconds. */
  generator: Record<string, { invocations: number; sec: number }>;
  /** Tasks per model. */
  tasksByModel: Record<string, number>;
  /** Seconds from the run's creation to its last update (how long the progress checks went on). */
  wallSec: number;
}

export type RecordedInfra = { where: 'local' } | RecordedCloudRun;

/** A run's infrastructure cost, in total and attributed to its models. */
export interface InfraCost {
  where: 'local' | 'cloud';
  /** Shards with no recorded capacity on Spot. */
  totalUsd: number;
  /** The same with those shards on demand (what the run cost if Spot had no capacity). */
  totalOnDemandUsd: number;
  /** Per model: Fargate of its shards (by its share of a shard's tasks), the rest by its share of the run's tasks. */
  byModel: Record<string, number>;
  /** Item by item (empty for a local run). */
  lines: InfraLine[];
  /** How it was estimated, one sentence: every format prints it. */
  basis: string;
}

export const LOCAL_INFRA_BASIS = 'local run: tests ran on this machine, no cloud cost ($0 infrastructure)';

/** The infrastructure cost of `recorded` on a stack of `sizes`. */
export function priceRecordedInfra(
  recorded: RecordedInfra,
  sizes: StackSizes = DEFAULT_STACK_SIZES,
  a: InfraAssumptions = DEFAULT_INFRA_ASSUMPTIONS,
): InfraCost {
  if (recorded.where === 'local') return { where: 'local', totalUsd: 0, totalOnDemandUsd: 0, byModel: {}, lines: [], basis: LOCAL_INFRA_BASIS };
  const { vcpu, memoryGb, architecture } = sizes.shardTask;
  const slots = Math.max(1, Math.floor(vcpu));
  const hourly = (capacity: 'spot' | 'on-demand') => {
    const p = capacity === 'spot' ? P.fargate.spot[architecture] : P.fargate.onDemand[architecture];
    return vcpu * p.vcpuHour + memoryGb * p.gbHour;
  };
  const byModel: Record<string, number> = {};
  const add = (model: string, usd: number) => void (byModel[model] = (byModel[model] ?? 0) + usd);
  let fargate = 0;
  let fargateOnDemand = 0;
  let shardSec = 0;
  let unrecordedCapacity = 0;
  let estimatedWall = 0;
  for (const s of recorded.shards) {
    const sec = Math.max(P.fargate.minimumBilledSec, s.wallSec ?? a.imagePullSec + (s.envCheckRan ? a.environmentCheckSec : 0) + s.testSec / slots);
    if (s.wallSec === undefined) estimatedWall++;
    if (s.capacity === undefined) unrecordedCapacity++;
    const hours = sec / 3600;
    const usd = s.failed ? hours * (hourly('spot') + hourly('on-demand')) : hours * hourly(s.capacity ?? 'spot');
    const usdOnDemand = s.failed ? usd : hours * hourly(s.capacity ?? 'on-demand');
    shardSec += sec;
    fargate += usd;
    fargateOnDemand += usdOnDemand;
    const shardTasks = Object.values(s.tasksByModel).reduce((x, n) => x + n, 0);
    for (const [model, n] of Object.entries(s.tasksByModel)) if (shardTasks > 0) add(model, (usd * n) / shardTasks);
  }

  // Everything but Fargate through the estimate's formulas, with the recorded counts and durations.
  const tasks = Object.values(recorded.tasksByModel).reduce((x, n) => x + n, 0);
  const calls = Object.values(recorded.generator).reduce((x, g) => x + g.invocations, 0);
  const genSec = Object.values(recorded.generator).reduce((x, g) => x + g.sec, 0);
  const modelCallSec = calls > 0 ? genSec / calls : 0;
  // One lane whose concurrency makes the estimate's generation time the run's recorded wall time.
  const lanes = [{ calls, concurrency: recorded.wallSec > 0 ? genSec / recorded.wallSec : 1 }];
  const checks = recorded.shards.filter((s) => s.envCheckRan).length;
  const rest = estimateRunInfra({ papers: checks, shards: recorded.shards.length, tasks, interactiveCalls: calls, lanes }, sizes, {
    ...a,
    modelCallSec: Number(modelCallSec.toFixed(3)),
  }).lines;
  const restUsd = rest.reduce((x, l) => x + l.usd, 0);
  for (const [model, n] of Object.entries(recorded.tasksByModel)) if (tasks > 0) add(model, (restUsd * n) / tasks);

  const fargateLine: InfraLine = {
    item: `Fargate (${architecture})`,
    usd: fargate,
    arithmetic: `${recorded.shards.length} shard(s), ${(shardSec / 3600).toFixed(2)} task-hour(s) of ${vcpu} vCPU and ${memoryGb} GB${unrecordedCapacity ? `; ${unrecordedCapacity} priced on Spot (capacity not recorded)` : ''}${estimatedWall ? `; ${estimatedWall} wall time(s) estimated (pull ${a.imagePullSec} s, env check ${a.environmentCheckSec} s once per paper, recorded test seconds / ${slots} slots)` : ''}`,
  };
  const failed = recorded.shards.filter((s) => s.failed).length;
  const basis =
    `cloud run: estimated from ${recorded.shards.length} recorded shard(s)${failed ? ` (${failed} failed, billed on Spot and on demand)` : ''}, ` +
    `their tests' recorded durations and ${calls} generator invocation(s), at AWS list prices (${P.region}, ${P.asOf}); ` +
    `shards priced on Spot ($${(fargateOnDemand + restUsd).toFixed(4)} had they run on demand)`;
  return {
    where: 'cloud',
    totalUsd: fargate + restUsd,
    totalOnDemandUsd: fargateOnDemand + restUsd,
    byModel,
    lines: [fargateLine, ...rest],
    basis,
  };
}
