/**
 * `rcb cloud push | run | status | results | cancel` against mocked AWS: the stack's outputs
 * from CloudFormation, the bucket, the run table and the state machine.
 */
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { mockClient } from 'aws-sdk-client-mock';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { loadPset } from '../../core/pset/read-pset';
import { runId as computeRunId } from '../../core/ids';
import { loadTemplate } from '../../core/prompt/template';
import { resourcePath } from '../../core/util/package-root';
import { createPsetBundle } from '../../core/cloud/pset-bundle';
import { MAX_DEADLINE_SEC, runWorkflowInputSchema } from '../../core/cloud/payloads';
import { Command } from 'commander';
import { registerCloudCommands } from '../../bin/commands/cloud/register-cloud-commands';
import type { RunRecord } from '../../core/records';
import { HostedModels } from '../../adapters/models/hosted-models';
import { loadRegistry } from '../../adapters/models/registry';
import { envKeySource } from '../../core/keys';
import { UsageError } from '../../bin/commands/common';
import { executionArn, type CloudDeps } from '../../app/deployed-stack';
import { cloudPush } from '../../bin/commands/cloud/push';
import { cloudRun } from '../../bin/commands/cloud/run';
import { parseDeadlineSec, type CloudRunOptions } from '../../bin/commands/cloud/cloud-run-flags';
import { cloudStatus } from '../../bin/commands/cloud/status';
import { cloudResults } from '../../bin/commands/cloud/results';
import { cloudCancel } from '../../bin/commands/cloud/cancel';
import { EXAMPLE } from './cloud-fixture';
import { makeRun } from '../aws/records';

const cfnMock = mockClient(CloudFormationClient);
const s3Mock = mockClient(S3Client);
const sfnMock = mockClient(SFNClient);
const docMock = mockClient(DynamoDBDocumentClient);

const STATE_MACHINE = 'arn:aws:states:eu-west-1:111122223333:stateMachine:RunWorkflow1234';
const OUTPUTS = [
  { OutputKey: 'ArtifactsBucketName', OutputValue: 'rcb-artifacts' },
  { OutputKey: 'RunsTableName', OutputValue: 'rcb-runs' },
  { OutputKey: 'RunWorkflowArn', OutputValue: STATE_MACHINE },
  { OutputKey: 'DashboardName', OutputValue: 'Rcb' },
];

let out: string;
let err: string;
function deps(): CloudDeps {
  return {
    cfn: new CloudFormationClient({ region: 'eu-west-1' }),
    s3: new S3Client({ region: 'eu-west-1' }),
    doc: DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'eu-west-1' })),
    sfn: new SFNClient({ region: 'eu-west-1' }),
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    sleep: async () => undefined,
    pollMs: 0,
  };
}

/** The run item as DynamoRunStore stores it. */
function runItem(run: RunRecord): Record<string, unknown> {
  return {
    pk: `RUN#${run.runId}`,
    sk: 'META',
    runId: run.runId,
    record: JSON.stringify(run),
    status: run.status,
    spentUsd: run.spentUsd,
    reservedUsd: run.reservedUsd,
    updatedAt: run.updatedAt,
    ...(run.spec.budgetUsd !== null ? { budgetUsd: run.spec.budgetUsd } : {}),
  };
}

function body(text: string) {
  return { transformToByteArray: async () => new TextEncoder().encode(text) } as never;
}

function runOptions(overrides: Partial<CloudRunOptions> = {}): CloudRunOptions {
  return {
    model: ['oracle', 'empty'],
    samples: '1',
    paper: true,
    timeout: '60',
    concurrency: '16',
    executor: 'warm',
    stackName: 'Rcb',
    skipDoctor: true,
    ...overrides,
  };
}

const hosted = () => new HostedModels(loadRegistry(), envKeySource({}));

beforeEach(() => {
  cfnMock.reset();
  s3Mock.reset();
  sfnMock.reset();
  docMock.reset();
  out = '';
  err = '';
  cfnMock
    .on(DescribeStacksCommand, { StackName: 'Rcb' })
    .resolves({ Stacks: [{ StackName: 'Rcb', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: OUTPUTS }] });
  s3Mock.on(PutObjectCommand).resolves({});
});

describe('stack outputs', () => {
  it('names the missing output when the stack is not an rcb stack', async () => {
    cfnMock
      .on(DescribeStacksCommand)
      .resolves({ Stacks: [{ StackName: 'Rcb', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: OUTPUTS.slice(1) }] });
    await expect(cloudPush({ stackName: 'Rcb' }, deps())).rejects.toThrow(/no output ArtifactsBucketName/);
  });

  it('says how to give a region when the SDK has none, as a usage error', async () => {
    cfnMock.on(DescribeStacksCommand).rejects(new Error('Region is missing'));
    await expect(cloudStatus('r1', { stackName: 'Rcb' }, deps())).rejects.toThrow(UsageError);
    await expect(cloudStatus('r1', { stackName: 'Rcb' }, deps())).rejects.toThrow(/no AWS region: pass --region or set AWS_REGION/);
  });

  it('says the stack does not exist, as a usage error', async () => {
    cfnMock.on(DescribeStacksCommand).rejects(new Error('Stack with id Other does not exist'));
    await expect(cloudStatus('r1', { stackName: 'Other' }, deps())).rejects.toThrow(UsageError);
  });

  it('derives the execution ARN of a run from the state machine ARN', () => {
    expect(executionArn(STATE_MACHINE, 'abc')).toBe('arn:aws:states:eu-west-1:111122223333:execution:RunWorkflow1234:abc');
  });
});

describe('rcb cloud push', () => {
  it("uploads the pset bundle under its content digest and the template under its own, to the stack's bucket", async () => {
    // Prepare
    const bundle = createPsetBundle(loadPset(EXAMPLE, { papers: ['grouprms'] }));
    const templateDigest = createHash('sha256')
      .update(readFileSync(resourcePath('prompt-template.txt')))
      .digest('hex');

    // Act
    const code = await cloudPush({ stackName: 'Rcb', papers: 'grouprms' }, deps());

    // Assess
    expect(code).toBe(0);
    const puts = s3Mock.commandCalls(PutObjectCommand).map((c) => [c.args[0].input.Bucket, c.args[0].input.Key]);
    expect(puts).toEqual([
      ['rcb-artifacts', bundle.key],
      ['rcb-artifacts', `psets/templates/${templateDigest}.txt`],
    ]);
    expect(out).toContain(`s3://rcb-artifacts/${bundle.key}`);
  });
});

describe('rcb cloud run', () => {
  it("starts an execution named by the local run id, with the uploaded bundle as the spec's pset, and returns with --detach", async () => {
    // Prepare: the id `rcb run` gives the same flags.
    const pset = loadPset(EXAMPLE);
    const template = loadTemplate(resourcePath('prompt-template.txt'));
    const localId = computeRunId({
      psetDigest: pset.digest,
      psetRoot: pset.root,
      models: [
        { id: 'oracle', params: {} },
        { id: 'empty', params: {} },
      ],
      samples: 1,
      withPaper: true,
      papers: null,
      promptTemplateDigest: template.digest,
      timeoutSec: 60,
      budgetUsd: null,
    });
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: executionArn(STATE_MACHINE, localId), startDate: new Date() });

    // Act
    const code = await cloudRun(runOptions({ detach: true, budget: '5' }), hosted(), deps());

    // Assess
    expect(code).toBe(0);
    const [start] = sfnMock.commandCalls(StartExecutionCommand);
    expect(start.args[0].input.name).toBe(localId);
    expect(start.args[0].input.stateMachineArn).toBe(STATE_MACHINE);
    const input = runWorkflowInputSchema.parse(JSON.parse(start.args[0].input.input!));
    expect(input.runId).toBe(localId);
    expect(input.spec.psetRoot).toBe(createPsetBundle(pset).key);
    expect(input.spec.budgetUsd).toBe(5);
    expect(Object.keys(input.models).sort()).toEqual(['empty', 'oracle']);
    expect(s3Mock.commandCalls(PutObjectCommand).map((c) => c.args[0].input.Key)).toContain(input.spec.psetRoot);
    expect(out).toBe(`${localId}\n`);
    expect(sfnMock.commandCalls(DescribeExecutionCommand)).toHaveLength(0);
  });

  it("hands the batch lane its models: every registry model with --batch, a sweep's batch-mode models as given", async () => {
    // Prepare
    sfnMock
      .on(StartExecutionCommand)
      .callsFake((input: { name: string }) => ({ executionArn: executionArn(STATE_MACHINE, input.name), startDate: new Date() }));
    const inputOf = (call: number) => runWorkflowInputSchema.parse(JSON.parse(sfnMock.commandCalls(StartExecutionCommand)[call].args[0].input.input!));

    // Act
    expect(await cloudRun(runOptions({ model: ['oracle', 'gpt-5.4'], batch: true, detach: true }), hosted(), deps())).toBe(0);
    expect(
      await cloudRun(
        runOptions({ model: ['gpt-5.4', 'gpt-5.4-mini'], batchSettings: { models: ['gpt-5.4-mini'], maxRounds: 2 }, detach: true }),
        hosted(),
        deps(),
      ),
    ).toBe(0);
    expect(await cloudRun(runOptions({ model: ['gpt-5.4'], detach: true }), hosted(), deps())).toBe(0);

    // Assess: offline models never go to the lane; without either, no batch settings.
    expect(inputOf(0).batch).toEqual({ models: ['gpt-5.4'] });
    expect(inputOf(1).batch).toEqual({ models: ['gpt-5.4-mini'], maxRounds: 2 });
    expect(inputOf(2).batch).toBeUndefined();
  });

  it('records --deadline in the workflow input, lists it in --help, and refuses a malformed or too long one naming the flag', async () => {
    // Prepare
    sfnMock
      .on(StartExecutionCommand)
      .callsFake((input: { name: string }) => ({ executionArn: executionArn(STATE_MACHINE, input.name), startDate: new Date() }));
    const program = new Command().exitOverride();
    registerCloudCommands(program, () => undefined);
    const runCommand = program.commands.find((c) => c.name() === 'cloud')!.commands.find((c) => c.name() === 'run')!;

    // Act
    expect(await cloudRun(runOptions({ deadline: '36h', detach: true }), hosted(), deps())).toBe(0);
    expect(await cloudRun(runOptions({ deadline: '1d12h', detach: true, budget: '1' }), hosted(), deps())).toBe(0);
    expect(await cloudRun(runOptions({ deadline: '90m', detach: true, budget: '2' }), hosted(), deps())).toBe(0);
    expect(await cloudRun(runOptions({ deadline: '48h', detach: true, budget: '3' }), hosted(), deps())).toBe(0);

    // Assess: seconds in the input (PlanRun hands them to CheckProgress); the largest admitted is 48 h.
    const inputs = sfnMock.commandCalls(StartExecutionCommand).map((c) => runWorkflowInputSchema.parse(JSON.parse(c.args[0].input.input!)));
    expect(inputs.map((i) => i.deadlineSec)).toEqual([36 * 3600, 36 * 3600, 90 * 60, MAX_DEADLINE_SEC]);
    expect(runCommand.helpInformation().replace(/\s+/g, ' ')).toContain('--deadline <duration> how long generation may run');
    for (const [bad, why] of [
      ['49h', /--deadline must be at most 48h/],
      ['3d', /--deadline must be at most 48h/],
      ['soon', /--deadline must be a duration such as 36h, 90m/],
      ['36', /--deadline must be a duration/],
      ['10s', /--deadline must be at least 1m/],
    ] as const) {
      await expect(cloudRun(runOptions({ deadline: bad, detach: true }), hosted(), deps())).rejects.toThrow(why);
    }
    expect(parseDeadlineSec('2h30m')).toBe(9000);
    // Refused before anything is uploaded or started.
    expect(sfnMock.commandCalls(StartExecutionCommand)).toHaveLength(4);
  });

  it('refuses --batch without a registry model, naming why', async () => {
    await expect(cloudRun(runOptions({ batch: true, detach: true }), hosted(), deps())).rejects.toThrow(/--batch needs a registry model/);
    expect(sfnMock.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });

  it('starts a run whose executions failed and timed out again under the next attempt name, and follows a running one', async () => {
    // Prepare: <id> failed, <id>-2 timed out; names are kept for 90 days.
    const taken = (name: string) => {
      const err = new Error(`Execution Already Exists: ${name}`);
      err.name = 'ExecutionAlreadyExists';
      return err;
    };
    let localId = '';
    sfnMock.on(StartExecutionCommand).callsFake((input: { name: string }) => {
      if (!localId) localId = input.name;
      if (input.name === localId || input.name === `${localId}-2`) throw taken(input.name);
      return { executionArn: executionArn(STATE_MACHINE, input.name), startDate: new Date() };
    });
    sfnMock.on(DescribeExecutionCommand).callsFake((input: { executionArn: string }) => ({
      status: input.executionArn.endsWith('-2') ? 'TIMED_OUT' : 'FAILED',
      executionArn: input.executionArn,
      stateMachineArn: STATE_MACHINE,
      startDate: new Date(),
    }));

    // Act
    const code = await cloudRun(runOptions({ detach: true }), hosted(), deps());

    // Assess: the third name, with the same run id and input.
    expect(code).toBe(0);
    const names = sfnMock.commandCalls(StartExecutionCommand).map((c) => c.args[0].input.name);
    expect(names).toEqual([localId, `${localId}-2`, `${localId}-3`]);
    const inputs = sfnMock.commandCalls(StartExecutionCommand).map((c) => runWorkflowInputSchema.parse(JSON.parse(c.args[0].input.input!)).runId);
    expect(new Set(inputs)).toEqual(new Set([localId]));
    expect(err).toContain(`run ${localId} started again (attempt 3; earlier: FAILED, TIMED_OUT), resuming from what is stored`);
    expect(out).toBe(`${localId}\n`);

    // Act: the same command while attempt 3 runs starts nothing.
    sfnMock.reset();
    sfnMock.on(StartExecutionCommand).callsFake((input: { name: string }) => {
      throw taken(input.name);
    });
    sfnMock.on(DescribeExecutionCommand).callsFake((input: { executionArn: string }) => ({
      status: input.executionArn.endsWith('-3') ? 'RUNNING' : 'FAILED',
      executionArn: input.executionArn,
      stateMachineArn: STATE_MACHINE,
      startDate: new Date(),
    }));
    expect(await cloudRun(runOptions({ detach: true }), hosted(), deps())).toBe(0);
    expect(err).toContain(`run ${localId} was started before (execution ${localId}-3); watching it`);
  });

  it('uploads the file of a replayed model with the run, under the digest its parameters carry', async () => {
    // Prepare
    const file = require('node:path').join(EXAMPLE, '..', '..', 'test', 'fixtures', 'replays', 'wrong-answers.jsonl');
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });

    // Act
    const code = await cloudRun(runOptions({ model: [`replay:${file}`], detach: true }), hosted(), deps());

    // Assess
    expect(code).toBe(0);
    const [start] = sfnMock.commandCalls(StartExecutionCommand);
    const input = runWorkflowInputSchema.parse(JSON.parse(start.args[0].input.input!));
    const digest = createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 16);
    expect(input.spec.models.every((m) => m.params.replay === digest)).toBe(true);
    const put = s3Mock.commandCalls(PutObjectCommand).find((c) => c.args[0].input.Key === `psets/replays/${digest}.jsonl`);
    expect(put?.args[0].input.Body?.toString()).toBe(readFileSync(file, 'utf8'));
  });

  it('refuses a model that is neither offline, replayed nor in the registry', async () => {
    await expect(cloudRun(runOptions({ model: ['no-such-model'], detach: true }), hosted(), deps())).rejects.toThrow(/unknown model "no-such-model"/);
    expect(sfnMock.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });

  it('follows the execution until it ends and prints the leaderboard Aggregate stored', async () => {
    // Prepare
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    sfnMock
      .on(DescribeExecutionCommand)
      .resolvesOnce({ status: 'RUNNING', executionArn: 'x', stateMachineArn: STATE_MACHINE, startDate: new Date() })
      .resolves({ status: 'SUCCEEDED', executionArn: 'x', stateMachineArn: STATE_MACHINE, startDate: new Date() });
    docMock.on(GetCommand).callsFake((input) => {
      const runId = String(input.Key.pk).slice('RUN#'.length);
      return { Item: runItem({ ...makeRun(runId), status: 'succeeded' }) };
    });
    docMock.on(QueryCommand).resolves({ Items: [] });
    docMock.on(BatchGetCommand).resolves({ Responses: {} });
    s3Mock.on(GetObjectCommand).callsFake((input) => {
      if (String(input.Key).endsWith('/reports/leaderboard.txt')) return { Body: body('model  scaled pass@1 %\noracle 100.00\n') };
      throw Object.assign(new Error('NoSuchKey'), { name: 'NoSuchKey' });
    });

    // Act
    const code = await cloudRun(runOptions(), hosted(), deps());

    // Assess
    expect(code).toBe(0);
    expect(sfnMock.commandCalls(DescribeExecutionCommand).length).toBeGreaterThanOrEqual(2);
    expect(out).toBe('\nmodel  scaled pass@1 %\noracle 100.00\n');
    expect(err).toContain('run succeeded (execution SUCCEEDED)');
  });

  it("exits 1 with the run's error when the execution failed", async () => {
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    sfnMock
      .on(DescribeExecutionCommand)
      .resolves({ status: 'FAILED', error: 'BudgetExceededError', executionArn: 'x', stateMachineArn: STATE_MACHINE, startDate: new Date() });
    docMock.on(GetCommand).callsFake((input) => ({
      Item: { ...runItem({ ...makeRun(String(input.Key.pk).slice(4)), status: 'failed' }), error: 'estimated worst-case cost $12 exceeds the budget of $10' },
    }));
    docMock.on(QueryCommand).resolves({ Items: [] });
    docMock.on(BatchGetCommand).resolves({ Responses: {} });

    const code = await cloudRun(runOptions({ budget: '10' }), hosted(), deps());

    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toContain('exceeds the budget of $10');
  });
});

describe('rcb cloud status', () => {
  it("prints the execution state and the run's progress from the table", async () => {
    // Prepare
    const run: RunRecord = { ...makeRun('r1', { budgetUsd: 2 }), status: 'generating', spentUsd: 0.5 };
    sfnMock.on(DescribeExecutionCommand, { executionArn: executionArn(STATE_MACHINE, 'r1') }).resolves({
      status: 'RUNNING',
      executionArn: 'x',
      stateMachineArn: STATE_MACHINE,
      startDate: new Date('2026-01-02T03:04:05Z'),
    });
    docMock.on(GetCommand).resolves({ Item: runItem(run) });
    // No shard failed: the run has no infra_error record in the bucket (S3 answers NoSuchKey).
    s3Mock.on(GetObjectCommand).rejects(Object.assign(new Error('The specified key does not exist.'), { name: 'NoSuchKey' }));
    docMock
      .on(QueryCommand)
      .callsFake((input) =>
        input.ExpressionAttributeValues?.[':prefix'] === 'TASK#'
          ? { Items: [1, 2, 3].map((n) => ({ taskId: `t${n}`, paper: 'p', file: 'f.py', snippet: 's', loc: 1, model: 'gpt-test', sample: 0, seq: n })) }
          : { Items: [] },
      );
    docMock
      .on(BatchGetCommand)
      .resolves({ Responses: { 'rcb-runs': [{ record: JSON.stringify({ taskId: 't1', model: 'gpt-test', text: 'x', createdAt: '2026-01-01' }) }] } });

    // Act
    const code = await cloudStatus('r1', { stackName: 'Rcb' }, deps());

    // Assess
    expect(code).toBe(0);
    expect(out).toContain('execution: RUNNING (started 2026-01-02T03:04:05.000Z)');
    expect(out).toContain('progress: generating: 1/3 answered, 0/3 judged, spend $0.5000 of $2.00');
  });
});

describe('rcb cloud results', () => {
  it('prints the report Aggregate stored for the format asked', async () => {
    s3Mock.on(GetObjectCommand, { Bucket: 'rcb-artifacts', Key: 'runs/r1/reports/report.json' }).resolves({ Body: body('{"models":[]}\n') });
    // The JSON report's status is read afresh from the run item; none here, so the stored text stands.
    docMock.on(GetCommand).resolves({});

    const code = await cloudResults('r1', { stackName: 'Rcb', format: 'json', subset: 'all' }, deps());

    expect(code).toBe(0);
    expect(out).toBe('{"models":[]}\n');
  });

  it('refuses an unknown format before calling AWS', async () => {
    await expect(cloudResults('r1', { stackName: 'Rcb', format: 'xml', subset: 'all' }, deps())).rejects.toThrow(/--format must be one of/);
    expect(cfnMock.calls()).toHaveLength(0);
  });
});

describe('rcb cloud cancel', () => {
  it('marks a running run cancelled on its item and leaves the execution to evaluate what is answered', async () => {
    docMock.on(GetCommand).resolves({ Item: runItem({ ...makeRun('r1'), status: 'generating' }) });
    docMock.on(UpdateCommand).resolves({});

    const code = await cloudCancel('r1', { stackName: 'Rcb' }, deps());

    expect(code).toBe(0);
    const [update] = docMock.commandCalls(UpdateCommand);
    expect(update.args[0].input.Key).toEqual({ pk: 'RUN#r1', sk: 'META' });
    expect(update.args[0].input.ExpressionAttributeValues?.[':status']).toBe('cancelled');
    expect(sfnMock.commandCalls(StopExecutionCommand)).toHaveLength(0);
  });

  it("with --now also stops the run's execution", async () => {
    docMock.on(GetCommand).resolves({ Item: runItem({ ...makeRun('r1'), status: 'evaluating' }) });
    docMock.on(UpdateCommand).resolves({});
    sfnMock.on(StopExecutionCommand).resolves({ stopDate: new Date() });

    await cloudCancel('r1', { stackName: 'Rcb', now: true }, deps());

    expect(sfnMock.commandCalls(StopExecutionCommand).map((c) => c.args[0].input.executionArn)).toEqual([executionArn(STATE_MACHINE, 'r1')]);
  });

  it('changes nothing on a run that already ended', async () => {
    docMock.on(GetCommand).resolves({ Item: runItem({ ...makeRun('r1'), status: 'succeeded' }) });

    const code = await cloudCancel('r1', { stackName: 'Rcb' }, deps());

    expect(code).toBe(1);
    expect(docMock.commandCalls(UpdateCommand)).toHaveLength(0);
  });
});

describe('rcb cloud status --wait', () => {
  /** The run's one execution: RUNNING at the first poll, then `status`; the run item ends `runStatus`. */
  function endingRun(status: 'SUCCEEDED' | 'FAILED', runStatus: RunRecord['status']): void {
    const ended: RunRecord = { ...makeRun('r1', { budgetUsd: 2 }), status: runStatus, spentUsd: 1.5 };
    sfnMock
      .on(DescribeExecutionCommand, { executionArn: executionArn(STATE_MACHINE, 'r1') })
      .resolvesOnce({ status: 'RUNNING', executionArn: 'x', stateMachineArn: STATE_MACHINE, startDate: new Date() })
      .resolvesOnce({ status: 'RUNNING', executionArn: 'x', stateMachineArn: STATE_MACHINE, startDate: new Date() })
      .resolves({ status, executionArn: 'x', stateMachineArn: STATE_MACHINE, startDate: new Date(), stopDate: new Date() });
    sfnMock
      .on(DescribeExecutionCommand, { executionArn: executionArn(STATE_MACHINE, 'r1-2') })
      .rejects(Object.assign(new Error('Execution Does Not Exist'), { name: 'ExecutionDoesNotExist' }));
    docMock
      .on(GetCommand)
      .resolvesOnce({ Item: runItem({ ...ended, status: 'generating' }) })
      .resolves({ Item: runItem(ended) });
    docMock.on(QueryCommand).resolves({ Items: [] });
    s3Mock.on(GetObjectCommand, { Key: 'runs/r1/reports/leaderboard.txt' }).resolves({ Body: body('oracle  100.00\n') });
  }

  it.each([
    ['SUCCEEDED', 'succeeded', 0],
    ['SUCCEEDED', 'succeeded_with_errors', 4],
    ['SUCCEEDED', 'budget_exhausted', 3],
    ['SUCCEEDED', 'cancelled', 1],
    ['FAILED', 'failed', 1],
  ] as const)('follows an execution that ends %s with the run %s to its end, and exits %i', async (execution, runStatus, exitCode) => {
    // Prepare
    endingRun(execution, runStatus);

    // Act
    const code = await cloudStatus('r1', { stackName: 'Rcb', wait: true }, deps());

    // Assess
    expect(code).toBe(exitCode);
    expect(err).toContain('generating:');
    expect(err).toContain(`run ${runStatus} (execution ${execution})`);
    if (execution === 'SUCCEEDED') expect(out).toContain('oracle  100.00');
  });

  it('is a usage error for a run that never started', async () => {
    sfnMock.on(DescribeExecutionCommand).rejects(Object.assign(new Error('Execution Does Not Exist'), { name: 'ExecutionDoesNotExist' }));
    await expect(cloudStatus('nope', { stackName: 'Rcb', wait: true }, deps())).rejects.toThrow('no execution of run nope in stack Rcb');
  });
});
