/**
 * The evaluation task role is narrowed to what a shard does, and dynalite and s3rver do not
 * enforce IAM: so a shard is evaluated here by the container's own main() on recorded
 * clients, and every DynamoDB and S3 call it made must be allowed by a statement of the
 * synthesized task role (action, table or index, leading key; object key or listed prefix)
 * and by the gateway endpoint policies. A new call the role does not cover fails here, not
 * on the first deployed run.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../container/entry';
import { startLocalAws, type LocalAws } from '../../emulator/local-aws';
import { startContainerMetadata } from '../../emulator/container-metadata';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { resourcePath } from '../../core/util/package-root';
import { runId as computeRunId } from '../../core/ids';
import type { RunSpec } from '../../core/records';
import type { ModelClient } from '../../core/model';
import { uploadPromptTemplate, uploadPsetBundle } from '../../core/cloud/pset-bundle';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { generateTask } from '../../core/cloud/generate-task';
import { loadRunContext } from '../../core/cloud/run-context';
import { EmptyModel, OracleModel } from '../../adapters/models/offline';
import { EXAMPLE, ListQueue } from '../cloud/cloud-fixture';
import { RunContextCache } from '../../core/cloud/run-context';
import { batchRound } from '../../core/cloud/batch-round';
import { staticKeySource } from '../../core/keys';
import { HostedModels } from '../../adapters/models/hosted-models';
import { parseModelEntry } from '../../adapters/models/registry';
import { answerBook } from '../../fakes/answer-book';
import { startFakeOpenAI, type FakeServer } from '../../fakes/fake-batch-servers';
import { actionsOf, flatten, logicalIdStartingWith, resourcesOfType, roleStatements, sharedStack, type Statement } from './helpers';
import { fakeEntry } from '../helpers/model-fixtures';

/** One AWS call, as IAM sees it. */
interface Call {
  action: string;
  /** DynamoDB: the partition keys touched; S3: the object key, or the listed prefix. */
  keys: string[];
  index?: string;
  /** s3:PutObjectTagging: the tag keys the request sets. */
  tagKeys?: string[];
  /** DynamoDB writes: the attribute names the request names (dynamodb:Attributes), keys included. */
  attributes?: string[];
}

const DYNAMO_ACTIONS: Record<string, string> = {
  GetCommand: 'GetItem',
  GetItemCommand: 'GetItem',
  PutCommand: 'PutItem',
  PutItemCommand: 'PutItem',
  UpdateCommand: 'UpdateItem',
  UpdateItemCommand: 'UpdateItem',
  DeleteCommand: 'DeleteItem',
  DeleteItemCommand: 'DeleteItem',
  QueryCommand: 'Query',
  BatchGetCommand: 'BatchGetItem',
  BatchGetItemCommand: 'BatchGetItem',
  BatchWriteCommand: 'BatchWriteItem',
  BatchWriteItemCommand: 'BatchWriteItem',
  ScanCommand: 'Scan',
};
const S3_ACTIONS: Record<string, string> = {
  GetObjectCommand: 'GetObject',
  HeadObjectCommand: 'GetObject',
  PutObjectCommand: 'PutObject',
  ListObjectsV2Command: 'ListBucket',
  ListObjectsCommand: 'ListBucket',
};

const str = (v: unknown): string => (typeof v === 'string' ? v : ((v as { S?: string })?.S ?? JSON.stringify(v)));

function dynamoCall(command: string, input: any): Call {
  const action = `dynamodb:${DYNAMO_ACTIONS[command] ?? command}`;
  if (input.Key && input.UpdateExpression) {
    const attributes = [...new Set([...Object.keys(input.Key), ...Object.values(input.ExpressionAttributeNames ?? {})])] as string[];
    return { action, keys: [str(input.Key.pk)], attributes };
  }
  if (input.Key) return { action, keys: [str(input.Key.pk)] };
  if (input.Item) return { action, keys: [str(input.Item.pk)], attributes: Object.keys(input.Item) };
  if (input.RequestItems) {
    const requests = Object.values(input.RequestItems as Record<string, { Keys?: any[] } | any[]>);
    const keys = requests.flatMap((r) => (Array.isArray(r) ? r.map((w) => w.PutRequest?.Item ?? w.DeleteRequest?.Key) : (r.Keys ?? [])));
    return { action, keys: keys.map((k) => str(k.pk)) };
  }
  // A Query names its partition key value in the expression's values.
  const pkName = Object.entries(input.ExpressionAttributeNames ?? {}).find(([, v]) => v === 'pk' || v === 'gsi1pk')?.[0];
  const pkValue = pkName ? new RegExp(`${pkName}\\s*=\\s*(:\\w+)`).exec(input.KeyConditionExpression ?? '')?.[1] : undefined;
  return { action, keys: [str(pkValue ? input.ExpressionAttributeValues?.[pkValue] : undefined)], index: input.IndexName };
}

function s3Call(command: string, input: any): Call[] {
  const action = `s3:${S3_ACTIONS[command] ?? command}`;
  const call = { action, keys: [action === 's3:ListBucket' ? (input.Prefix ?? '') : input.Key] };
  // A PutObject that tags its object (the run's cost-allocation tag) is also authorized as s3:PutObjectTagging.
  if (command === 'PutObjectCommand' && input.Tagging) {
    return [call, { action: 's3:PutObjectTagging', keys: [input.Key], tagKeys: [...new URLSearchParams(input.Tagging).keys()] }];
  }
  return [call];
}

/** Where the recorded clients' calls go now (the shard's, then the batch round's); none when null. */
let recording: Call[] | null = null;

/** Records every command a client sends (its input before marshalling) into `recording`. */
function record(client: { middlewareStack: any }, toCall: (command: string, input: any) => Call | Call[]): void {
  client.middlewareStack.add(
    (next: (args: any) => Promise<any>, context: { commandName: string }) => async (args: { input: any }) => {
      recording?.push(...[toCall(context.commandName, args.input)].flat());
      return next(args);
    },
    { step: 'initialize', name: 'rcbRecordCalls' },
  );
}

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

/** Is the call allowed by one of the statements, table and bucket named by their template ARNs? */
function allowed(call: Call, statements: Statement[], tableArn: string, bucketArn: string): boolean {
  return statements.some((s) => {
    if (s.Effect !== 'Allow' || !actionsOf(s).includes(call.action)) return false;
    const resources = flatten(s.Resource).split(',');
    if (call.action.startsWith('dynamodb:')) {
      const wanted = call.index ? `${tableArn}/index/${call.index}` : tableArn;
      if (!resources.includes(wanted)) return false;
      const leading = (s.Condition as any)?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] as string[] | undefined;
      const named = (s.Condition as any)?.['ForAllValues:StringEquals']?.['dynamodb:Attributes'] as string[] | undefined;
      if (named && !(call.attributes ?? []).every((a) => named.includes(a))) return false;
      return !leading || call.keys.every((k) => leading.some((p) => glob(p).test(k)));
    }
    if (call.action === 's3:ListBucket') {
      if (!resources.includes(bucketArn)) return false;
      const prefixes = (s.Condition as any)?.StringLike?.['s3:prefix'] as string[] | undefined;
      return !prefixes || call.keys.every((k) => prefixes.some((p) => glob(p).test(k)));
    }
    if (call.tagKeys) {
      const keys = (s.Condition as any)?.['ForAllValues:StringEquals']?.['s3:RequestObjectTagKeys'] as string[] | undefined;
      if (keys && !call.tagKeys.every((k) => keys.includes(k))) return false;
    }
    return call.keys.every((k) => resources.some((r) => glob(r).test(`${bucketArn}/${k}`)));
  });
}

let aws: LocalAws;
const calls: Call[] = [];
let exit: number;

beforeAll(async () => {
  // Prepare: a run planned and answered on the local servers, as PlanRun and the generator leave it.
  const scratchRoot = mkdtempSync(join(tmpdir(), 'rcb-task-role-'));
  chmodSync(scratchRoot, 0o755);
  aws = await startLocalAws({ scratchDir: join(scratchRoot, 'functions') });
  const storage = createStorageAdapters(aws.storage, { doc: aws.doc, s3: aws.s3 });
  const pset = loadPset(EXAMPLE, { papers: ['grouprms'] });
  const template = loadTemplate(resourcePath('prompt-template.txt'));
  const spec: RunSpec = {
    psetDigest: pset.digest,
    psetRoot: await uploadPsetBundle(storage.blobs, pset),
    models: [
      { id: 'oracle', params: {} },
      { id: 'empty', params: {} },
    ],
    samples: 1,
    withPaper: true,
    papers: ['grouprms'],
    promptTemplateDigest: template.digest,
    timeoutSec: 60,
    budgetUsd: null,
  };
  await uploadPromptTemplate(storage.blobs, readFileSync(resourcePath('prompt-template.txt'), 'utf8'));
  const runId = computeRunId(spec);
  const queue = new ListQueue();
  await planCloudRun({ ...storage, queue }, { runId, spec, models: { oracle: { config: {} }, empty: { config: {} } } });
  const ctx = await loadRunContext(storage, runId);
  const clients = new Map<string, ModelClient>([
    ['oracle', new OracleModel(ctx.pset)],
    ['empty', new EmptyModel()],
  ]);
  for (const { message } of queue.sent) await generateTask({ store: storage.store, clients }, ctx, message);

  // Act: the container's main() on recorded clients.
  record(aws.doc, dynamoCall);
  record(aws.s3, s3Call);
  recording = calls;
  const scratch = mkdtempSync(join(scratchRoot, 'task-'));
  chmodSync(scratch, 0o755);
  // The task metadata endpoint, so that the shard keeps its environment check under its image.
  const metadata = await startContainerMetadata({ imageId: 'sha256:0123abcd', image: 'rcb:test', containerName: 'evaluator' });
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    exit = await main(
      {
        ...aws.childEnv(),
        RCB_RUN_ID: runId,
        RCB_SHARD: 'grouprms',
        RCB_SCRATCH: scratch,
        RCB_PYTHON: '/usr/bin/python3',
        RCB_JOBS: '2',
        ECS_CONTAINER_METADATA_URI_V4: metadata.uri,
      },
      { doc: aws.doc, s3: aws.s3 },
    );
  } finally {
    recording = null;
    stderr.mockRestore();
    await metadata.close();
    rmSync(scratchRoot, { recursive: true, force: true });
  }
}, 120_000);

afterAll(async () => {
  await aws?.close();
});

describe('the evaluation task role', () => {
  const { template } = sharedStack();
  const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'EvaluationTaskRole');
  const tableArn = `\${${logicalIdStartingWith(template, 'AWS::DynamoDB::Table', 'StorageRuns')}.Arn}`;
  const bucketArn = `\${${logicalIdStartingWith(template, 'AWS::S3::Bucket', 'StorageArtifacts')}.Arn}`;

  it('allows every DynamoDB and S3 call a shard makes', () => {
    expect(exit).toBe(0);
    const actions = new Set(calls.map((c) => c.action));
    // What a shard does, so that a recording that missed a client cannot pass for coverage.
    expect([...actions].sort()).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      's3:GetObject',
      's3:PutObject',
      's3:PutObjectTagging',
    ]);
    const statements = roleStatements(template, role);
    expect(calls.filter((c) => !allowed(c, statements, tableArn, bucketArn))).toEqual([]);
    // Every object the shard writes is its run's, tagged so.
    expect(calls.filter((c) => c.action === 's3:PutObject').length).toBe(calls.filter((c) => c.action === 's3:PutObjectTagging').length);
    // The environment check: read and stored under the image, recorded under the run.
    expect(
      calls
        .filter((c) => c.keys.some((k) => k.startsWith('IMAGE#')))
        .map((c) => c.action)
        .sort(),
    ).toEqual(['dynamodb:GetItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:PutItem']);
    // Under a run's partition: verdicts, the paper's environment and the judged count, by UpdateItem only.
    const runWrites = calls.filter((c) => c.keys.some((k) => k.startsWith('RUN#')) && !['dynamodb:GetItem', 'dynamodb:BatchGetItem'].includes(c.action));
    expect(new Set(runWrites.map((c) => c.action))).toEqual(new Set(['dynamodb:UpdateItem']));
  });

  it('lets a shard write only its own attributes under RUN#: no whole-item put, no run, task or batch attribute', () => {
    const statements = roleStatements(template, role);
    const update = (attributes: string[]) => allowed({ action: 'dynamodb:UpdateItem', keys: ['RUN#r'], attributes }, statements, tableArn, bucketArn);
    // A PutItem replaces the whole item (the run's META included), whatever it names.
    expect(allowed({ action: 'dynamodb:PutItem', keys: ['RUN#r'], attributes: ['pk', 'sk', 'verdict'] }, statements, tableArn, bucketArn)).toBe(false);
    expect(allowed({ action: 'dynamodb:BatchWriteItem', keys: ['RUN#r'] }, statements, tableArn, bucketArn)).toBe(false);
    expect(allowed({ action: 'dynamodb:DeleteItem', keys: ['RUN#r'] }, statements, tableArn, bucketArn)).toBe(false);
    expect(update(['pk', 'sk', 'verdict', 'verdictBlob', 'expiresAt'])).toBe(true);
    expect(update(['pk', 'sk', 'countJudged'])).toBe(true);
    for (const other of ['record', 'status', 'budgetUsd', 'headroomUsd', 'spentUsd', 'countSettled', 'countTotal', 'gsi1pk', 'taskId', 'paper', 'nextSeq']) {
      expect([other, update(['pk', 'sk', other])]).toEqual([other, false]);
    }
    const returns = statements
      .filter((s) => actionsOf(s).includes('dynamodb:UpdateItem'))
      .map((s) => (s.Condition as any)?.StringEqualsIfExists?.['dynamodb:ReturnValues']);
    expect(returns).toEqual([['NONE', 'UPDATED_NEW']]);
  });

  it('and so do the gateway endpoint policies the calls go through', () => {
    const gateways = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).filter((e) => e.Properties?.VpcEndpointType === 'Gateway');
    const statements = gateways.flatMap((e) => e.Properties?.PolicyDocument.Statement as Statement[]);
    expect(calls.filter((c) => !allowed(c, statements, tableArn, bucketArn))).toEqual([]);
  });

  it("would refuse what a shard never needs: another run's index listing, a claim delete, an object outside evaluation/", () => {
    const statements = roleStatements(template, role);
    expect(allowed({ action: 'dynamodb:Query', keys: ['RUNS'], index: 'gsi1' }, statements, tableArn, bucketArn)).toBe(false);
    expect(allowed({ action: 'dynamodb:DeleteItem', keys: ['TASK#x'] }, statements, tableArn, bucketArn)).toBe(false);
    expect(allowed({ action: 'dynamodb:PutItem', keys: ['TASK#x'] }, statements, tableArn, bucketArn)).toBe(false);
    // Under IMAGE#: items are read and put, never updated, deleted or queried.
    expect(allowed({ action: 'dynamodb:PutItem', keys: ['IMAGE#sha256:x@py'] }, statements, tableArn, bucketArn)).toBe(true);
    expect(allowed({ action: 'dynamodb:UpdateItem', keys: ['IMAGE#sha256:x@py'] }, statements, tableArn, bucketArn)).toBe(false);
    expect(allowed({ action: 'dynamodb:Query', keys: ['IMAGE#sha256:x@py'] }, statements, tableArn, bucketArn)).toBe(false);
    expect(allowed({ action: 's3:PutObject', keys: ['runs/r/reports/leaderboard.txt'] }, statements, tableArn, bucketArn)).toBe(false);
    // Tags: the run's tag key on its evaluation outputs, no other key, nowhere else.
    const tagging = (keys: string[], tagKeys: string[]) => allowed({ action: 's3:PutObjectTagging', keys, tagKeys }, statements, tableArn, bucketArn);
    expect(tagging(['runs/r/evaluation/p/verdicts.json'], ['rcb:run'])).toBe(true);
    expect(tagging(['runs/r/evaluation/p/verdicts.json'], ['owner'])).toBe(false);
    expect(tagging(['runs/r/reports/leaderboard.txt'], ['rcb:run'])).toBe(false);
  });
});

/**
 * The batch round's role, the same way: a run whose model is in batch mode, planned on the
 * local servers, then two rounds of the lane (submit and poll; ingest) against a local
 * server in OpenAI's batch wire format, every table and bucket call recorded.
 */
describe('the batch round role', () => {
  const { template } = sharedStack();
  const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationBatchRoundRole');
  const tableArn = `\${${logicalIdStartingWith(template, 'AWS::DynamoDB::Table', 'StorageRuns')}.Arn}`;
  const bucketArn = `\${${logicalIdStartingWith(template, 'AWS::S3::Bucket', 'StorageArtifacts')}.Arn}`;
  const batchCalls: Call[] = [];
  let server: FakeServer;
  let settled = 0;

  beforeAll(async () => {
    const storage = createStorageAdapters(aws.storage, { doc: aws.doc, s3: aws.s3 });
    const pset = loadPset(EXAMPLE, { papers: ['grouprms'] });
    const promptTemplate = loadTemplate(resourcePath('prompt-template.txt'));
    server = await startFakeOpenAI(answerBook(pset, promptTemplate, true));
    server.backend.plans = [{ hold: true }];
    const entry = parseModelEntry(fakeEntry('openai', server.url));
    const hosted = new HostedModels([entry], staticKeySource({ OPENAI_API_KEY: 'test-key' }));
    const batch = hosted.resolveBatch(entry.id)!;
    const spec: RunSpec = {
      psetDigest: pset.digest,
      psetRoot: await uploadPsetBundle(storage.blobs, pset),
      models: [{ id: entry.id, params: hosted.resolve(entry.id)!.client.params }],
      samples: 1,
      withPaper: true,
      papers: ['grouprms'],
      promptTemplateDigest: promptTemplate.digest,
      timeoutSec: 60,
      budgetUsd: 5,
    };
    const runId = computeRunId(spec);
    await planCloudRun(
      { ...storage, queue: new ListQueue(), batchCosts: new Map([[entry.id, batch.cost]]) },
      { runId, spec, models: { [entry.id]: { config: {} } }, batch: { models: [entry.id] } },
    );

    // Act: what one warm BatchRound instance does over two rounds.
    recording = batchCalls;
    try {
      const ctx = await new RunContextCache(storage).get(runId);
      const deps = {
        store: storage.store,
        ledger: storage.ledger!,
        cache: storage.cache,
        counters: storage.counters,
        batchClients: new Map([[entry.id, batch.client]]),
        batchCosts: new Map([[entry.id, batch.cost]]),
      };
      await batchRound(deps, ctx);
      server.backend.release(server.backend.batches[0].id);
      settled = (await batchRound(deps, ctx)).settled;
    } finally {
      recording = null;
    }
  }, 60_000);
  afterAll(() => server?.close());

  it('allows every DynamoDB and S3 call two rounds make', () => {
    expect(settled).toBeGreaterThan(0);
    const actions = new Set(batchCalls.map((c) => c.action));
    expect([...actions].sort()).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      's3:GetObject',
    ]);
    expect(batchCalls.filter((c) => !allowed(c, roleStatements(template, role), tableArn, bucketArn))).toEqual([]);
  });

  it('would refuse what a round never needs: a claim delete, the runs index, any object write', () => {
    const statements = roleStatements(template, role);
    expect(allowed({ action: 'dynamodb:DeleteItem', keys: ['TASK#x'] }, statements, tableArn, bucketArn)).toBe(false);
    expect(allowed({ action: 'dynamodb:Query', keys: ['RUNS'], index: 'gsi1' }, statements, tableArn, bucketArn)).toBe(false);
    expect(allowed({ action: 's3:PutObject', keys: ['runs/r/plan.json'] }, statements, tableArn, bucketArn)).toBe(false);
  });
});
