/**
 * What the AWS infrastructure costs: per run or sweep (Fargate shard tasks on Spot and on
 * demand, image pulls included; Lambda; Step Functions; DynamoDB; S3; logs; SQS; X-Ray) and
 * idle per month (what the stack bills with nothing running), from the stack's sizes
 * (core/cost/infra-sizes.ts) and the one price table (core/cost/infra-prices.ts). Pure
 * arithmetic; every assumption about durations and request counts is a named field of
 * `InfraAssumptions`, printed with the figures.
 */
import { pollWaitSec, DEFAULT_POLL_SCHEDULE } from '../cloud/generation-polling';
import { HOURS_PER_MONTH, INFRA_PRICES as P } from './infra-prices';
import type { StackSizes } from './infra-sizes';

/** The default stack's sizes, as `cdk synth` makes them (test/infra/infra-cost.test.ts checks). */
export const DEFAULT_STACK_SIZES: StackSizes = {
  shardTask: { vcpu: 2, memoryGb: 8, architecture: 'X86_64' },
  functionMemoryMiB: { generate: 512, 'dead-letter': 256, 'batch-round': 512, 'plan-run': 1024, 'check-progress': 256, aggregate: 1024, 'mark-failed': 256 },
  interfaceEndpointAzs: [2, 2, 2],
  alarms: 33,
  dashboards: 1,
  queuePollers: 8,
  secrets: 1,
  kmsKeys: 1,
};

/** What a run is, for its infrastructure: how many tasks, on how many papers, with how many calls. */
export interface RunShape {
  /** Papers evaluated: one environment check each (cached per image, core/cloud/shard-environment.ts). */
  papers: number;
  /**
   * Shard tasks started: PlanRun's shards, one per paper and model, sliced by work
   * (core/cloud/shard-plan.ts planShards; before a run, plannedShardCount). Each pulls the image.
   */
  shards: number;
  /** Tasks (snippet x model x sample): each one generation and one test. */
  tasks: number;
  /** Tasks answered by an interactive model call in a generator invocation (the rest are offline or batched). */
  interactiveCalls: number;
  /**
   * The generation lanes the interactive calls go through: each lane's calls and its maximum
   * concurrency. Lanes run side by side, so generation lasts as long as the longest lane.
   */
  lanes: LaneLoad[];
}

/** One generation lane's share of a run: its calls, and how many it makes at once. */
export interface LaneLoad {
  calls: number;
  concurrency: number;
}

/** Seconds generation lasts: the longest lane's calls, `concurrency` at a time, `callSec` each. */
export function generationWallSec(lanes: LaneLoad[], callSec: number): number {
  return lanes.reduce((longest, l) => (l.calls > 0 ? Math.max(longest, (l.calls * callSec) / Math.max(1, l.concurrency)) : longest), 0);
}

/** Durations and request counts per task the estimate assumes; each is printed beside the figures. */
export interface InfraAssumptions {
  /** Seconds of one interactive model call, the generator's billed duration. */
  modelCallSec: number;
  /** Seconds to pull the evaluation image into a shard task (about 2 GB compressed). */
  imagePullSec: number;
  /** Seconds of a paper's environment check (its oracle run) in a shard. */
  environmentCheckSec: number;
  /** Seconds of one task's tests, run in parallel slots, one per vCPU. */
  testSecPerTask: number;
  /**
   * Billed DynamoDB capacity units, as the emulated flow consumes them by item size
   * (emulator/usage-meter.ts; docs/cloud.md "What a run costs in infrastructure"): per task
   * (task item, claim put and delete, completion, run item updates and their gsi1 copies,
   * verdict with its logs), per shard (shard and wave items, environment check), per run
   * (run item, plan, summary), and per shard per progress check (CheckProgress reads one
   * unsettled task's completion of each shard not yet in a wave, strongly consistent, at each
   * check: core/cloud/evaluation-waves.ts readyShards; counted for every shard, an upper bound).
   */
  dynamo: {
    writesPerTask: number;
    writesPerShard: number;
    writesPerRun: number;
    readsPerTask: number;
    readsPerShardCheck: number;
    readsPerShard: number;
    readsPerRun: number;
  };
  /** S3 requests: tier 1 (PUT, LIST) per shard and per run; tier 2 (GET) per shard, per check and per run. */
  s3: { tier1PerShard: number; tier1PerRun: number; tier2PerShard: number; tier2PerCheck: number; tier2PerRun: number };
  /** Messages per generator batch (the lanes' event source batch size): one receive and one delete each. */
  sqsBatchSize: number;
  /** Log bytes written per task (generator and shard logs together). */
  logBytesPerTask: number;
}

export const DEFAULT_INFRA_ASSUMPTIONS: InfraAssumptions = {
  // docs/cloud.md's measured calls take 60-100 s, and Lambda bills the generator's wait.
  modelCallSec: 80,
  imagePullSec: 90,
  environmentCheckSec: 60,
  testSecPerTask: 20,
  // Fitted to four metered emulated runs (4 x 5 x 1, 2, 4 and 2 x 5 x 2; docs/cloud.md).
  dynamo: { writesPerTask: 9, writesPerShard: 5.8, writesPerRun: 25, readsPerTask: 17, readsPerShardCheck: 1, readsPerShard: 2.4, readsPerRun: 26 },
  s3: { tier1PerShard: 1, tier1PerRun: 24, tier2PerShard: 3, tier2PerCheck: 3, tier2PerRun: 13 },
  sqsBatchSize: 1,
  logBytesPerTask: 4096,
};

export interface InfraLine {
  item: string;
  usd: number;
  /** How it was computed. */
  arithmetic: string;
}

export interface RunInfraEstimate {
  /** Shard tasks on Fargate Spot (the cluster's default) and, for comparison, on demand. */
  fargateSpot: InfraLine;
  fargateOnDemand: InfraLine;
  /** Everything but Fargate. */
  lines: InfraLine[];
  /** Fargate Spot plus the other lines. */
  totalUsd: number;
  /** Fargate on demand plus the other lines (what the run costs when Spot has no capacity). */
  totalOnDemandUsd: number;
  generationWallSec: number;
}

const fmt = (x: number, digits = 2) => x.toLocaleString('en-US', { maximumFractionDigits: digits });

/** Checks of the generation loop over `wallSec`, as the workflow makes them. */
function pollsOver(wallSec: number): number {
  let t = 0;
  let polls = 0;
  do {
    t += pollWaitSec(t, DEFAULT_POLL_SCHEDULE);
    polls++;
  } while (t < wallSec);
  return polls;
}

/** The infrastructure cost of one run (a sweep is one run of all its models). */
export function estimateRunInfra(shape: RunShape, sizes: StackSizes = DEFAULT_STACK_SIZES, a: InfraAssumptions = DEFAULT_INFRA_ASSUMPTIONS): RunInfraEstimate {
  const { vcpu, memoryGb, architecture } = sizes.shardTask;
  const slots = Math.max(1, Math.floor(vcpu));
  const shards = Math.max(0, shape.shards);
  const tasksPerShard = shards > 0 ? shape.tasks / shards : 0;
  // A paper's environment check runs in one of its shards (the others read the stored result): its time spread over them.
  const checkPerShard = shards > 0 ? (Math.min(shape.papers, shards) * a.environmentCheckSec) / shards : 0;
  const shardSec = Math.max(P.fargate.minimumBilledSec, a.imagePullSec + checkPerShard + (tasksPerShard * a.testSecPerTask) / slots);
  const shardHours = (shards * shardSec) / 3600;
  const fargate = (prices: { vcpuHour: number; gbHour: number }, label: string): InfraLine => ({
    item: `Fargate ${label}`,
    usd: shardHours * (vcpu * prices.vcpuHour + memoryGb * prices.gbHour),
    arithmetic: `${fmt(shards, 0)} shard(s) of ${shape.papers} paper(s) x ${fmt(shardSec, 0)} s (pull ${a.imagePullSec} s + env check ${a.environmentCheckSec} s once per paper, ${fmt(checkPerShard, 1)} s a shard + ${fmt(tasksPerShard, 1)} tasks x ${a.testSecPerTask} s / ${slots} slots) x (${vcpu} vCPU x $${prices.vcpuHour} + ${memoryGb} GB x $${prices.gbHour}) per hour`,
  });

  const generatorGb = (sizes.functionMemoryMiB.generate ?? 512) / 1024;
  const wallSec = generationWallSec(shape.lanes, a.modelCallSec);
  const polls = pollsOver(wallSec);
  const smallFnGbSec = ((sizes.functionMemoryMiB['check-progress'] ?? 256) / 1024) * 1 * polls;
  const orchestrationGbSec = (((sizes.functionMemoryMiB['plan-run'] ?? 1024) + (sizes.functionMemoryMiB.aggregate ?? 1024)) / 1024) * 30;
  const invocations = shape.interactiveCalls + polls + 2;
  const lambdaUsd =
    (shape.interactiveCalls * a.modelCallSec * generatorGb + smallFnGbSec + orchestrationGbSec) * P.lambda.arm64GbSecond +
    (invocations / 1e6) * P.lambda.perMillionRequests;
  // The workflow: start, plan, the check loop (Wait, CheckProgress, Choice), the Map of shards (about 5 each), aggregate.
  const transitions = 12 + polls * 3 + shards * 5;
  const requests = estimateRunRequests({ ...shape, checks: polls }, a);
  const writes = requests.writeUnits;
  const reads = requests.readUnits;
  const puts = requests.s3Tier1;
  const gets = requests.s3Tier2;
  const logGb = (shape.tasks * a.logBytesPerTask) / 1024 ** 3;
  const sqsRequests = requests.sqsRequests;
  const traces = invocations + shards;
  const lines: InfraLine[] = [
    {
      item: 'Lambda',
      usd: lambdaUsd,
      arithmetic: `${shape.interactiveCalls} generator call(s) x ${a.modelCallSec} s x ${generatorGb} GB + ${polls} progress check(s) + plan and aggregate, at $${P.lambda.arm64GbSecond}/GB-s; ${invocations} request(s)`,
    },
    {
      item: 'Step Functions',
      usd: (transitions / 1000) * P.stepFunctions.perThousandTransitions,
      arithmetic: `${transitions} state transitions x $${P.stepFunctions.perThousandTransitions}/1000`,
    },
    {
      item: 'DynamoDB',
      usd: (writes / 1e6) * P.dynamodb.perMillionWriteUnits + (reads / 1e6) * P.dynamodb.perMillionReadUnits,
      arithmetic: `${fmt(writes, 0)} WRU (${a.dynamo.writesPerTask} a task, ${a.dynamo.writesPerShard} a shard) x $${P.dynamodb.perMillionWriteUnits}/M + ${fmt(reads, 0)} RRU (${a.dynamo.readsPerTask} a task, ${a.dynamo.readsPerShardCheck} a shard at each of ${polls} check(s)) x $${P.dynamodb.perMillionReadUnits}/M`,
    },
    {
      item: 'S3 requests',
      usd: (puts / 1000) * P.s3.perThousandPuts + (gets / 1000) * P.s3.perThousandGets,
      arithmetic: `${puts} PUT x $${P.s3.perThousandPuts}/1000 + ${gets} GET x $${P.s3.perThousandGets}/1000`,
    },
    { item: 'CloudWatch Logs', usd: logGb * P.logs.ingestGb, arithmetic: `${fmt(logGb * 1024, 1)} MB ingested x $${P.logs.ingestGb}/GB` },
    {
      item: 'SQS',
      usd: (sqsRequests / 1e6) * P.sqs.perMillionRequests,
      arithmetic: `${sqsRequests} request(s) (sends ten a batch; a receive and a delete per ${a.sqsBatchSize}-message batch) x $${P.sqs.perMillionRequests}/M`,
    },
    { item: 'X-Ray', usd: (traces / 1e6) * P.xray.perMillionTraces, arithmetic: `${traces} trace(s) x $${P.xray.perMillionTraces}/M (after the free tier)` },
  ];
  const fargateSpot = fargate(P.fargate.spot[architecture], `Spot (${architecture})`);
  const fargateOnDemand = fargate(P.fargate.onDemand[architecture], `on demand (${architecture})`);
  const rest = lines.reduce((s, l) => s + l.usd, 0);
  return { fargateSpot, fargateOnDemand, lines, totalUsd: fargateSpot.usd + rest, totalOnDemandUsd: fargateOnDemand.usd + rest, generationWallSec: wallSec };
}

/** The stack's cost per month with nothing running, item by item, from its sizes. */
export function idleMonthlyCost(sizes: StackSizes, imageGb = 2): { lines: InfraLine[]; totalUsd: number } {
  const endpointAzHours = sizes.interfaceEndpointAzs.reduce((s, n) => s + n, 0) * HOURS_PER_MONTH;
  // Lambda keeps about 5 pollers on each SQS event source, each long-polling (20 s) 3 times a minute.
  const pollRequests = sizes.queuePollers * 5 * 3 * 60 * HOURS_PER_MONTH;
  const lines: InfraLine[] = [
    {
      item: 'interface endpoints',
      usd: endpointAzHours * P.vpcEndpoints.interfaceEndpointAzHour,
      arithmetic: `${sizes.interfaceEndpointAzs.length} endpoint(s) in ${sizes.interfaceEndpointAzs.join('+')} AZ(s) x $${P.vpcEndpoints.interfaceEndpointAzHour}/h x ${HOURS_PER_MONTH} h`,
    },
    { item: 'CloudWatch dashboards', usd: sizes.dashboards * P.cloudwatch.dashboardMonth, arithmetic: `${sizes.dashboards} x $${P.cloudwatch.dashboardMonth}` },
    { item: 'CloudWatch alarms', usd: sizes.alarms * P.cloudwatch.alarmMonth, arithmetic: `${sizes.alarms} standard alarm(s) x $${P.cloudwatch.alarmMonth}` },
    {
      item: 'SQS empty receives',
      usd: (pollRequests / 1e6) * P.sqs.perMillionRequests,
      arithmetic: `${sizes.queuePollers} queue poller(s) x 5 pollers x 3 polls/min x ${HOURS_PER_MONTH * 60} min = ${fmt(pollRequests / 1e6)} M x $${P.sqs.perMillionRequests}/M`,
    },
    { item: 'Secrets Manager', usd: sizes.secrets * P.secretsManager.secretMonth, arithmetic: `${sizes.secrets} secret(s) x $${P.secretsManager.secretMonth}` },
    { item: 'KMS keys', usd: sizes.kmsKeys * P.kms.keyMonth, arithmetic: `${sizes.kmsKeys} key(s) x $${P.kms.keyMonth}` },
    { item: 'ECR image storage', usd: imageGb * P.ecr.storageGbMonth, arithmetic: `~${imageGb} GB compressed x $${P.ecr.storageGbMonth}/GB` },
  ];
  return { lines, totalUsd: lines.reduce((s, l) => s + l.usd, 0) };
}

const usd = (x: number) => `$${x.toFixed(x < 1 ? 4 : 2)}`;

/** The lines `rcb estimate` and `rcb sweep plan` print. */
export function formatRunInfra(e: RunInfraEstimate, idle?: { totalUsd: number }): string {
  const rows = [e.fargateSpot, e.fargateOnDemand, ...e.lines];
  const width = Math.max(...rows.map((r) => r.item.length));
  const out = [`infrastructure (AWS list prices ${P.region}, ${P.asOf}; core/cost/infra-prices.ts):`];
  for (const r of rows) out.push(`  ${r.item.padEnd(width)}  ${usd(r.usd).padStart(9)}  ${r.arithmetic}`);
  out.push(
    `  infrastructure total ${usd(e.totalUsd)} on Spot, ${usd(e.totalOnDemandUsd)} on demand; generation about ${fmt(e.generationWallSec / 3600, 1)} h (the longest lane at its concurrency)`,
  );
  if (idle) out.push(`  idle stack ${usd(idle.totalUsd)} per month besides (rcb cloud doctor shows it for the deployed stack)`);
  return `${out.join('\n')}\n`;
}

/** The idle table, for `rcb cloud doctor` and docs. */
export function formatIdle(idle: { lines: InfraLine[]; totalUsd: number }): string {
  const width = Math.max(...idle.lines.map((l) => l.item.length));
  const out = ['idle cost per month (nothing running):'];
  for (const l of idle.lines) out.push(`  ${l.item.padEnd(width)}  ${usd(l.usd).padStart(8)}  ${l.arithmetic}`);
  out.push(`  total ${usd(idle.totalUsd)}`);
  return `${out.join('\n')}\n`;
}

/** The billed requests of a run: DynamoDB capacity units, S3 requests by tier, SQS requests. */
export interface RunRequests {
  writeUnits: number;
  readUnits: number;
  s3Tier1: number;
  s3Tier2: number;
  sqsRequests: number;
}

/**
 * The requests `estimateRunInfra` prices, counted as the flow makes them; `checks` is the
 * number of progress checks (from the generation's length, else given: the emulator's count).
 * test/e2e/cloud-usage-estimate.test.ts holds it within 15% of a metered emulated sweep.
 */
export function estimateRunRequests(shape: RunShape & { checks?: number }, a: InfraAssumptions = DEFAULT_INFRA_ASSUMPTIONS): RunRequests {
  const shards = Math.max(0, shape.shards);
  const checks = shape.checks ?? pollsOver(generationWallSec(shape.lanes, a.modelCallSec));
  const d = a.dynamo;
  return {
    writeUnits: Math.round(shape.tasks * d.writesPerTask + shards * d.writesPerShard + d.writesPerRun),
    readUnits: Math.round(shape.tasks * d.readsPerTask + shards * (d.readsPerShard + d.readsPerShardCheck * checks) + d.readsPerRun),
    s3Tier1: Math.round(shards * a.s3.tier1PerShard + a.s3.tier1PerRun),
    s3Tier2: Math.round(shards * a.s3.tier2PerShard + checks * a.s3.tier2PerCheck + a.s3.tier2PerRun),
    sqsRequests: Math.ceil(shape.interactiveCalls / 10) + Math.ceil((2 * shape.interactiveCalls) / Math.max(1, a.sqsBatchSize)),
  };
}
