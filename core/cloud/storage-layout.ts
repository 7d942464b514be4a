/**
 * The layout of the cloud's storage, in one module with no SDK or CDK import, read by infra
 * (IAM conditions, lifecycle rules, the table's key schema) and by the adapters alike, so a
 * key prefix or attribute name is spelled once:
 *
 *   table items   pk               sk
 *   run           RUN#<runId>      META
 *   task          RUN#<runId>      TASK#<taskId>
 *   verdict       RUN#<runId>      VERDICT#<taskId>   (verdict, verdictBlob: VERDICT_ATTRIBUTES)
 *   batch         RUN#<runId>      BATCH#<batchKey>   (the batch lane's ledger)
 *   completion    TASK#<taskId>    COMPLETION
 *   claim         TASK#<taskId>    CLAIM
 *   paper env     RUN#<runId>      ENV#<paper>        (the environment check a run's shards found: runEnvironment)
 *   image check   IMAGE#<image>    ENV#<paperDigest>  (an environment check, once per image)
 *   check claim   IMAGE#<image>    CLAIM#<paperDigest> (the shard running that check)
 *   lane throttle LANE#<lane>      THROTTLE           (the lane's shared AIMD limit and slots: core/lane-throttle.ts)
 *
 * <image> is the image's digest and the interpreter in it (`sha256:...@/opt/venv/bin/python3`):
 * a paper's check is valid for every shard started from the same image, of any run.
 *
 *   bucket        psets/   (pset bundles, templates, replay files; kept)
 *                 runs/<runId>/   (plan, evaluation, reports; expires)
 */

/** Attribute and index names of the single run table. */
export const TABLE_ATTRIBUTES = {
  partitionKey: 'pk',
  sortKey: 'sk',
  gsi1Name: 'gsi1',
  gsi1PartitionKey: 'gsi1pk',
  gsi1SortKey: 'gsi1sk',
  ttlAttribute: 'expiresAt',
} as const;

/** The progress counters on a run's item (atomic ADD; see RunCounters in ports.ts). */
export const COUNTER_ATTRIBUTES = { total: 'countTotal', settled: 'countSettled', failed: 'countFailed', judged: 'countJudged' } as const;

/**
 * The attributes the shard task writes under a run's partition, named as no other item of
 * RUN#<runId> names one: the task role may UpdateItem there with these (and the keys, the TTL
 * and the judged counter) only, so a shard cannot replace or rewrite a run, task or batch item
 * (docs/security.md, "What a compromised shard can still touch").
 */
export const VERDICT_ATTRIBUTES = {
  /** The verdict as JSON (without its log texts when those are in the blob store). */
  record: 'verdict',
  /** The blob store key of the whole verdict, when it was too large for the item. */
  blobKey: 'verdictBlob',
  /** The environment check a run's shards found for a paper (ENV#<paper> under the run). */
  runEnvironment: 'runEnvironment',
} as const;

/**
 * Every attribute the shard task may name in a write under RUN#<runId> (dynamodb:Attributes
 * of its UpdateItem): the keys, its own attributes, the run's judged counter and the TTL.
 */
export const SHARD_RUN_ATTRIBUTES = [
  TABLE_ATTRIBUTES.partitionKey,
  TABLE_ATTRIBUTES.sortKey,
  VERDICT_ATTRIBUTES.record,
  VERDICT_ATTRIBUTES.blobKey,
  VERDICT_ATTRIBUTES.runEnvironment,
  COUNTER_ATTRIBUTES.judged,
  TABLE_ATTRIBUTES.ttlAttribute,
];

/** Prefixes of the table's partition and sort keys. */
export const KEY_PREFIXES = {
  /** Partition of a run's items (run, tasks, verdicts). */
  run: 'RUN#',
  /** Partition of a task's items (completion, claim), which outlive a run; also a task's sort key under its run. */
  task: 'TASK#',
  verdict: 'VERDICT#',
  /** A batch the run's batch lane submitted (core/batch.ts BatchRecord), under its run. */
  batch: 'BATCH#',
  /** Partition of the environment checks of one image (core/cloud/shard-environment.ts), kept across runs. */
  image: 'IMAGE#',
  /** A paper's environment check: under an image (the cached result) and under a run (what its shards found). */
  environment: 'ENV#',
  /** The claim of the shard running an image's check of a paper, under the image. */
  claim: 'CLAIM#',
  /** Partition of a provider lane's shared throttle (its AIMD limit and the slots held), kept across runs. */
  lane: 'LANE#',
} as const;

/** Attributes of a batch item besides its keys: the record as JSON, and the order it was first written in. */
export const BATCH_ATTRIBUTES = { record: 'record', seq: 'seq' } as const;

/** gsi1 partition holding every run item, sorted by `<createdAt>#<runId>`. */
export const RUNS_INDEX_PARTITION = 'RUNS';

/** An IAM `dynamodb:LeadingKeys` pattern for the partitions of one prefix. */
export const leadingKeys = (prefix: (typeof KEY_PREFIXES)[keyof typeof KEY_PREFIXES]): string => `${prefix}*`;

type Key = { pk: string; sk: string };

/** Key of each item kind. */
export const runTableKey = {
  run: (runId: string): Key => ({ pk: `${KEY_PREFIXES.run}${runId}`, sk: 'META' }),
  task: (runId: string, taskId: string): Key => ({ pk: `${KEY_PREFIXES.run}${runId}`, sk: `${KEY_PREFIXES.task}${taskId}` }),
  taskCounter: (runId: string): Key => ({ pk: `${KEY_PREFIXES.run}${runId}`, sk: 'TASKSEQ' }),
  verdict: (runId: string, taskId: string): Key => ({ pk: `${KEY_PREFIXES.run}${runId}`, sk: `${KEY_PREFIXES.verdict}${taskId}` }),
  batch: (runId: string, batchKey: string): Key => ({ pk: `${KEY_PREFIXES.run}${runId}`, sk: `${KEY_PREFIXES.batch}${batchKey}` }),
  completion: (taskId: string): Key => ({ pk: `${KEY_PREFIXES.task}${taskId}`, sk: 'COMPLETION' }),
  generationClaim: (taskId: string): Key => ({ pk: `${KEY_PREFIXES.task}${taskId}`, sk: 'CLAIM' }),
  runPaperEnvironment: (runId: string, paper: string): Key => ({ pk: `${KEY_PREFIXES.run}${runId}`, sk: `${KEY_PREFIXES.environment}${paper}` }),
  imageCheck: (image: string, paperDigest: string): Key => ({ pk: `${KEY_PREFIXES.image}${image}`, sk: `${KEY_PREFIXES.environment}${paperDigest}` }),
  imageCheckClaim: (image: string, paperDigest: string): Key => ({ pk: `${KEY_PREFIXES.image}${image}`, sk: `${KEY_PREFIXES.claim}${paperDigest}` }),
  laneThrottle: (lane: string): Key => ({ pk: `${KEY_PREFIXES.lane}${lane}`, sk: 'THROTTLE' }),
};

/** Top-level prefixes of the artifacts bucket. */
export const ARTIFACT_PREFIXES = {
  /** Pset bundles, prompt templates and replay files, uploaded by `rcb cloud run`, keyed by content digest. Kept. */
  psets: 'psets/',
  /** Everything one run produces: `runs/<runId>/...` (plan, evaluation, reports). Expires. */
  runs: 'runs/',
} as const;

const runs = ARTIFACT_PREFIXES.runs;
const psets = ARTIFACT_PREFIXES.psets;
/** A run's evaluation outputs: `runs/<runId>/evaluation/...`, the only keys the shard task writes. */
const evaluation = 'evaluation/';

/** Where run artifacts live in the bucket. */
export const cloudKeys = {
  planManifest: (runId: string) => `${runs}${runId}/plan.json`,
  /** The shards one execution evaluates, a JSON array the evaluation Map's ItemReader reads (PlanRun writes it). */
  shardManifest: (runId: string) => `${runs}${runId}/shards.json`,
  /**
   * One wave of an execution's evaluation (core/cloud/evaluation-waves.ts): the shards that
   * became ready together, a JSON array the wave's Distributed Map reads (CheckProgress writes it).
   */
  waveShards: (runId: string, execution: string, wave: number) => `${runs}${runId}/waves/${execution}/${wave}/shards.json`,
  /** Every shard an execution dispatched in its waves 1..wave (shard ids), read by the next wave's CheckProgress. */
  waveLedger: (runId: string, execution: string, wave: number) => `${runs}${runId}/waves/${execution}/${wave}/dispatched.json`,
  /** Where a wave's Map Run wrote its results (its ResultWriterDetails), recorded by the check after it. */
  waveResults: (runId: string, execution: string, wave: number) => `${runs}${runId}/waves/${execution}/${wave}/results.json`,
  /**
   * The tasks still unsettled in each shard not yet in a wave, by shard id
   * (core/cloud/evaluation-waves.ts readyShards): lets a check read one task per open shard
   * instead of every task of the run.
   */
  waveCursor: (runId: string, execution: string) => `${runs}${runId}/waves/${execution}/cursor.json`,
  /** The waves of one execution. */
  wavesPrefix: (runId: string, execution: string) => `${runs}${runId}/waves/${execution}/`,
  /** The task definition revision and image a run's shards use, fixed by its first PlanRun. */
  evaluationPin: (runId: string) => `${runs}${runId}/evaluation-pin.json`,
  /** The shards whose every attempt failed and their tasks (infra_error), as Aggregate found them. */
  infraErrors: (runId: string) => `${runs}${runId}/infra-errors.json`,
  reportPrefix: (runId: string) => `${runs}${runId}/reports/`,
  /** Verdicts and logs of one shard (the container may write only under `runs/<id>/evaluation/`). */
  shardVerdicts: (runId: string, paper: string, slice?: string) => `${runs}${runId}/${evaluation}${paper}/${slice ? `${slice}/` : ''}verdicts.json`,
  /** A verdict too large for its table item (its logs), by content digest (adapters/aws/dynamo-run-store.ts). */
  verdictRecord: (runId: string, taskId: string, digest: string) => `${runs}${runId}/${evaluation}verdicts/${taskId}-${digest}.json`,
  promptTemplate: (digest: string) => `${psets}templates/${digest}.txt`,
  psetBundle: (digest: string) => `${psets}${digest}.json`,
  /** A replay file of the run's `replay:FILE` models, by the digest their parameters carry. */
  replayFile: (digest: string) => `${psets}replays/${digest}.jsonl`,
} as const;

/** Object key patterns of IAM grants (resources, `s3:prefix` conditions) over the artifacts bucket. */
export const ARTIFACT_PATTERNS = {
  /** Every pset bundle, template and replay file. */
  psets: `${psets}*`,
  /** Everything of every run. */
  runs: `${runs}*`,
  /** The evaluation outputs of every run (`runs/<runId>/evaluation/...`): where the shard task may write, and nowhere else. */
  evaluationOutput: `${runs}*/${evaluation}*`,
} as const;
