/**
 * Deployment configuration of the rcb stack: what a team may change with `cdk.json`
 * context or `-c key=value` on the command line, validated once, with the failing key
 * named. Tests build the same object directly and skip the context.
 */
import { MAP_MAX_CONCURRENCY } from './state-names';
import { existsSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import type { Node } from 'constructs';
import { defaultLanes } from '../adapters/models/provider-lanes';

/** A provider lane: one SQS queue feeding the generator at its own concurrency. */
export interface LaneConfig {
  /** Lane name, usually the model provider (`openai`, `anthropic`, ...): lower-case letters, digits, dashes. */
  readonly name: string;
  /**
   * Most generator invocations the lane runs at once (SQS event source maximum
   * concurrency, 2..1000). With a batch size of 1 this is the number of model calls in flight.
   */
  readonly maxConcurrency: number;
  /**
   * Messages handed to one generator invocation (1..10).
   * @default 1
   */
  readonly batchSize?: number;
}

/**
 * Lanes used when `rcb:lanes` is absent: each lane of the provider lane table
 * (adapters/models/provider-lanes.ts, which the router and the provider modules read too;
 * `openai-responses` shares the `openai` lane).
 */
export const DEFAULT_LANES: readonly LaneConfig[] = defaultLanes();

/**
 * What a deployment may set besides the stack's name and environment: the stack's own
 * props (RcbStackProps), each read from the `rcb:*` context key of the same name.
 */
export interface RcbOptions {
  /**
   * Provider lanes (one SQS queue and DLQ each).
   * @default DEFAULT_LANES
   */
  readonly lanes?: readonly LaneConfig[];
  /**
   * E-mail address for alarm notifications.
   * @default - no SNS topic
   */
  readonly alarmEmail?: string;
  /**
   * Shards evaluated at once per run (the evaluation Distributed Map's MaxConcurrency:
   * 1..10,000, infra/state-names.ts MAP_MAX_CONCURRENCY), i.e. Fargate tasks in flight.
   * @default 10
   */
  readonly evaluationMaxConcurrency?: number;
  /**
   * Most evaluation shards one run may have: the largest sweep this deployment admits
   * (PlanRun refuses more and says how to split it). 1..100,000.
   * @default 5000 (core/cloud/shard-plan.ts MAX_SHARDS_DEFAULT)
   */
  readonly maxShards?: number;
  /**
   * CPU units of a shard task.
   * @default 2048
   */
  readonly taskCpu?: number;
  /**
   * Memory of a shard task, MiB.
   * @default 8192
   */
  readonly taskMemoryMiB?: number;
  /**
   * The evaluation image's unpacked size, MB, which sizes the shard task's ephemeral storage
   * (measured by `npm run image:check`).
   * @default 6295 (infra/ephemeral-storage.ts MEASURED_IMAGE_SIZE)
   */
  readonly imageUnpackedMB?: number;
  /**
   * The image's compressed layers, MB (gzip as cdk deploy pushes them).
   * @default 2980
   */
  readonly imageCompressedMB?: number;
  /**
   * Ephemeral storage left to a shard's tests beside the image, GiB.
   * @default 16
   */
  readonly shardScratchGiB?: number;
  /**
   * Concurrent executions reserved for each orchestration function (PlanRun, CheckProgress,
   * Aggregate, MarkRunFailed); 0 reserves none. The account must keep 100 unreserved beside them.
   * @default 5
   */
  readonly orchestrationReservedConcurrency?: number;
  /**
   * CPU architecture of the evaluation image and tasks.
   * @default 'X86_64'
   */
  readonly cpuArchitecture?: 'X86_64' | 'ARM64';
  /**
   * Deploy the ECR and Logs interface endpoints (the stack's only fixed cost); `false`
   * parks evaluation.
   * @default true
   */
  readonly interfaceEndpoints?: boolean;
  /**
   * Availability zones (1 or 2) of the interface endpoints' network interfaces.
   * @default 2
   */
  readonly endpointAzCount?: number;
  /**
   * A prebuilt evaluation image (`rcb cloud push-image` prints it): an ECR repository name or
   * URI and the image digest, `<repository>@sha256:<hex>`. Without it `cdk deploy` builds the
   * image from container/Dockerfile.
   * @default - built during cdk deploy
   */
  readonly image?: string;
  /**
   * A Route 53 Resolver DNS Firewall on the evaluation VPC that answers only the AWS
   * endpoint names shard tasks need (closes DNS exfiltration through the VPC resolver).
   * @default false
   */
  readonly dnsFirewall?: boolean;
  /**
   * Days before run artifacts (`runs/` in the bucket) expire; 0 keeps them.
   * @default 180
   */
  readonly artifactRetentionDays?: number;
  /**
   * Keep the bucket and table when the stack is deleted.
   * @default true
   */
  readonly retainData?: boolean;
  /**
   * Generator function timeout, seconds (lane visibility timeout is six times this).
   * @default 600
   */
  readonly generatorTimeoutSec?: number;
  /**
   * Oldest-message age, seconds, that raises a lane's alarm.
   * @default 21600
   */
  readonly maxMessageAgeSec?: number;
  /**
   * Bedrock resources the generator may invoke.
   * @default - see GenerationConstructProps.bedrockResourceArns
   */
  readonly bedrockResourceArns?: string[];
  /**
   * Bedrock batch inference in the cloud batch lane: the service roles Bedrock assumes (the
   * entries' `batch_role_arn`) and the S3 locations of their JSONL (`batch_s3_uri`).
   * @default - none: the batch round may not start Bedrock jobs
   */
  readonly bedrockBatch?: BedrockBatchConfig;
  /**
   * A models file (the registry's format) merged over the shipped models.yaml in the
   * PlanRun and Generate bundles: the deployment's own hosted models. Absolute path.
   * @default - the shipped registry only
   */
  readonly modelsFile?: string;
}

/** Everything the stack reads from context; every member but the name is optional and defaulted by the constructs. */
export interface RcbDeployConfig extends RcbOptions {
  readonly stackName: string;
  readonly account?: string;
  readonly region?: string;
}

/** Context keys, in one place so that docs, cdk.json and code agree. */
export const CONTEXT_KEYS = {
  stackName: 'rcb:stackName',
  account: 'rcb:account',
  region: 'rcb:region',
  lanes: 'rcb:lanes',
  alarmEmail: 'rcb:alarmEmail',
  evaluationMaxConcurrency: 'rcb:evaluationMaxConcurrency',
  maxShards: 'rcb:maxShards',
  taskCpu: 'rcb:taskCpu',
  taskMemoryMiB: 'rcb:taskMemoryMiB',
  imageUnpackedMB: 'rcb:imageUnpackedMB',
  imageCompressedMB: 'rcb:imageCompressedMB',
  shardScratchGiB: 'rcb:shardScratchGiB',
  orchestrationReservedConcurrency: 'rcb:orchestrationReservedConcurrency',
  cpuArchitecture: 'rcb:cpuArchitecture',
  interfaceEndpoints: 'rcb:interfaceEndpoints',
  dnsFirewall: 'rcb:dnsFirewall',
  endpointAzCount: 'rcb:endpointAzCount',
  image: 'rcb:image',
  artifactRetentionDays: 'rcb:artifactRetentionDays',
  retainData: 'rcb:retainData',
  generatorTimeoutSec: 'rcb:generatorTimeoutSec',
  maxMessageAgeSec: 'rcb:maxMessageAgeSec',
  bedrockResourceArns: 'rcb:bedrockResourceArns',
  bedrockBatch: 'rcb:bedrockBatch',
  modelsFile: 'rcb:modelsFile',
} as const;

const LANE_NAME = /^[a-z][a-z0-9-]{0,30}$/;

/** Fails with the offending key, so a typo in cdk.json is found at synth, not at deploy. */
export class ConfigError extends Error {
  constructor(key: string, message: string) {
    super(`rcb config: ${key}: ${message}`);
    this.name = 'ConfigError';
  }
}

/** Checks a lane list: names unique and well formed, concurrency and batch size in SQS/Lambda's ranges. */
export function validateLanes(lanes: readonly LaneConfig[], key = CONTEXT_KEYS.lanes): LaneConfig[] {
  if (!Array.isArray(lanes) || lanes.length === 0) throw new ConfigError(key, 'needs at least one lane');
  const seen = new Set<string>();
  return lanes.map((lane, i) => {
    const at = `${key}[${i}]`;
    if (typeof lane !== 'object' || lane === null) throw new ConfigError(at, 'must be an object { name, maxConcurrency }');
    if (typeof lane.name !== 'string' || !LANE_NAME.test(lane.name)) {
      throw new ConfigError(`${at}.name`, `must match ${LANE_NAME} (got ${JSON.stringify(lane.name)})`);
    }
    if (seen.has(lane.name)) throw new ConfigError(`${at}.name`, `duplicate lane "${lane.name}"`);
    seen.add(lane.name);
    // SQS event sources accept a maximum concurrency of 2..1000 (AWS::Lambda::EventSourceMapping ScalingConfig).
    if (!Number.isInteger(lane.maxConcurrency) || lane.maxConcurrency < 2 || lane.maxConcurrency > 1000) {
      throw new ConfigError(`${at}.maxConcurrency`, `must be an integer in 2..1000 (got ${JSON.stringify(lane.maxConcurrency)})`);
    }
    const batchSize = lane.batchSize ?? 1;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10) {
      throw new ConfigError(`${at}.batchSize`, `must be an integer in 1..10 (got ${JSON.stringify(lane.batchSize)})`);
    }
    return { name: lane.name, maxConcurrency: lane.maxConcurrency, batchSize };
  });
}

function parseJsonish(key: string, raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^[[{]/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      throw new ConfigError(key, `is not valid JSON: ${text}`);
    }
  }
  return text;
}

function readString(node: Node, key: string): string | undefined {
  const raw = parseJsonish(key, node.tryGetContext(key));
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string') throw new ConfigError(key, `must be a string (got ${JSON.stringify(raw)})`);
  return raw;
}

function readStringList(node: Node, key: string): string[] | undefined {
  const raw = parseJsonish(key, node.tryGetContext(key));
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw) || raw.some((v) => typeof v !== 'string' || !v.startsWith('arn:'))) {
    throw new ConfigError(key, `must be a list of ARNs (got ${JSON.stringify(raw)})`);
  }
  return raw as string[];
}

/** What the batch round needs to run Bedrock batch inference jobs: the roles it passes, the S3 locations it writes and reads. */
export interface BedrockBatchConfig {
  /** IAM role ARNs (the entries' batch_role_arn). */
  readonly roleArns: string[];
  /** `s3://bucket[/prefix]` locations (the entries' batch_s3_uri). */
  readonly s3Uris: string[];
}

function readBedrockBatch(node: Node, key: string): BedrockBatchConfig | undefined {
  const raw = parseJsonish(key, node.tryGetContext(key)) as Record<string, unknown> | undefined | null;
  if (raw === undefined || raw === null) return undefined;
  const roles = raw.roleArns;
  const uris = raw.s3Uris;
  if (!Array.isArray(roles) || !roles.length || roles.some((r) => typeof r !== 'string' || !/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/.test(r))) {
    throw new ConfigError(key, `roleArns must be a non-empty list of IAM role ARNs (got ${JSON.stringify(roles)})`);
  }
  if (!Array.isArray(uris) || !uris.length || uris.some((u) => typeof u !== 'string' || !/^s3:\/\/[^/]+(\/.*)?$/.test(u))) {
    throw new ConfigError(key, `s3Uris must be a non-empty list of s3://bucket[/prefix] (got ${JSON.stringify(uris)})`);
  }
  return { roleArns: roles as string[], s3Uris: uris as string[] };
}

function readInt(node: Node, key: string, min: number, max: number): number | undefined {
  const raw = parseJsonish(key, node.tryGetContext(key));
  if (raw === undefined || raw === null) return undefined;
  const value = typeof raw === 'string' ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(key, `must be an integer in ${min}..${max} (got ${JSON.stringify(raw)})`);
  }
  return value;
}

function readBool(node: Node, key: string): boolean | undefined {
  const raw = parseJsonish(key, node.tryGetContext(key));
  if (raw === undefined || raw === null) return undefined;
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  throw new ConfigError(key, `must be true or false (got ${JSON.stringify(raw)})`);
}

/** A file path (relative to the working directory of `cdk synth`), made absolute; it must exist. */
function readExistingFile(node: Node, key: string): string | undefined {
  const raw = readString(node, key);
  if (raw === undefined) return undefined;
  const abs = resolvePath(raw);
  if (!existsSync(abs)) throw new ConfigError(key, `no such file: ${abs}`);
  return abs;
}

/** `<repository>@sha256:<64 hex>`: a repository name or URI pinned by digest. */
export const IMAGE_REFERENCE = /^([a-z0-9][a-z0-9._/:-]*[a-z0-9])@(sha256:[0-9a-f]{64})$/;

function readImage(node: Node, key: string): string | undefined {
  const raw = readString(node, key);
  if (raw === undefined) return undefined;
  if (!IMAGE_REFERENCE.test(raw)) throw new ConfigError(key, `must be <repository>@sha256:<64 hex digits> (got ${JSON.stringify(raw)})`);
  return raw;
}

/** Reads and validates the `rcb:*` context of an app. Absent keys stay undefined (construct defaults apply). */
export function configFromContext(node: Node): RcbDeployConfig {
  const lanesRaw = parseJsonish(CONTEXT_KEYS.lanes, node.tryGetContext(CONTEXT_KEYS.lanes));
  const lanes = lanesRaw === undefined || lanesRaw === null ? undefined : validateLanes(lanesRaw as LaneConfig[]);
  const arch = readString(node, CONTEXT_KEYS.cpuArchitecture);
  if (arch !== undefined && arch !== 'X86_64' && arch !== 'ARM64') {
    throw new ConfigError(CONTEXT_KEYS.cpuArchitecture, `must be X86_64 or ARM64 (got ${JSON.stringify(arch)})`);
  }
  const alarmEmail = readString(node, CONTEXT_KEYS.alarmEmail);
  if (alarmEmail !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(alarmEmail)) {
    throw new ConfigError(CONTEXT_KEYS.alarmEmail, `is not an e-mail address: ${alarmEmail}`);
  }
  const stackName = readString(node, CONTEXT_KEYS.stackName) ?? 'Rcb';
  if (!/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(stackName)) {
    throw new ConfigError(CONTEXT_KEYS.stackName, `is not a valid CloudFormation stack name: ${stackName}`);
  }
  return {
    stackName,
    account: readString(node, CONTEXT_KEYS.account),
    region: readString(node, CONTEXT_KEYS.region),
    lanes,
    alarmEmail,
    evaluationMaxConcurrency: readInt(node, CONTEXT_KEYS.evaluationMaxConcurrency, 1, MAP_MAX_CONCURRENCY.distributed),
    maxShards: readInt(node, CONTEXT_KEYS.maxShards, 1, 100_000),
    taskCpu: readInt(node, CONTEXT_KEYS.taskCpu, 256, 16384),
    taskMemoryMiB: readInt(node, CONTEXT_KEYS.taskMemoryMiB, 512, 122880),
    imageUnpackedMB: readInt(node, CONTEXT_KEYS.imageUnpackedMB, 1, 200_000),
    imageCompressedMB: readInt(node, CONTEXT_KEYS.imageCompressedMB, 1, 200_000),
    shardScratchGiB: readInt(node, CONTEXT_KEYS.shardScratchGiB, 1, 199),
    orchestrationReservedConcurrency: readInt(node, CONTEXT_KEYS.orchestrationReservedConcurrency, 0, 1000),
    cpuArchitecture: arch as RcbDeployConfig['cpuArchitecture'],
    interfaceEndpoints: readBool(node, CONTEXT_KEYS.interfaceEndpoints),
    dnsFirewall: readBool(node, CONTEXT_KEYS.dnsFirewall),
    endpointAzCount: readInt(node, CONTEXT_KEYS.endpointAzCount, 1, 2),
    image: readImage(node, CONTEXT_KEYS.image),
    artifactRetentionDays: readInt(node, CONTEXT_KEYS.artifactRetentionDays, 0, 36500),
    retainData: readBool(node, CONTEXT_KEYS.retainData),
    generatorTimeoutSec: readInt(node, CONTEXT_KEYS.generatorTimeoutSec, 10, 900),
    maxMessageAgeSec: readInt(node, CONTEXT_KEYS.maxMessageAgeSec, 60, 1209600),
    bedrockResourceArns: readStringList(node, CONTEXT_KEYS.bedrockResourceArns),
    bedrockBatch: readBedrockBatch(node, CONTEXT_KEYS.bedrockBatch),
    modelsFile: readExistingFile(node, CONTEXT_KEYS.modelsFile),
  };
}
