/**
 * `rcb cloud doctor` against SDK answers shaped as the services return them (aws-sdk-client-mock):
 * a new account's quotas (Lambda: 10 concurrent executions; Fargate: AWS's default 6 vCPU on
 * demand and on Spot, no applied value) and the deployed template of the default stack
 * (trimmed to what the doctor reads: the lanes' event sources, the shard task, the Map).
 */
import { CloudFormationClient, GetTemplateCommand } from '@aws-sdk/client-cloudformation';
import { GetAccountSettingsCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  GetAWSDefaultServiceQuotaCommand,
  GetServiceQuotaCommand,
  ListServiceQuotasCommand,
  NoSuchResourceException,
  ServiceQuotasClient,
} from '@aws-sdk/client-service-quotas';
import { mockClient } from 'aws-sdk-client-mock';
import { join } from 'node:path';
import { checkFit, formatFit, type RunDemand } from '../../adapters/aws/quotas-fit';
import { deployedStackFromTemplate, readAccountQuotas, readDeployedStack } from '../../adapters/aws/quotas';
import { cloudDoctor } from '../../bin/commands/cloud/doctor';

const LANES = { Openai: 8, Anthropic: 4, Gemini: 4, Bedrock: 4 };

/** GetTemplate's body for the default stack, trimmed to the resources the doctor reads. */
function recordedTemplate(): Record<string, unknown> {
  const resources: Record<string, unknown> = {};
  for (const [lane, concurrency] of Object.entries(LANES)) {
    resources[`Generation${lane}Mapping`] = {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: { EventSourceArn: { 'Fn::GetAtt': [`Generation${lane}Queue1A2B3C4D`, 'Arn'] }, ScalingConfig: { MaximumConcurrency: concurrency } },
    };
    resources[`Generation${lane}DeadLetterMapping`] = {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: { EventSourceArn: { 'Fn::GetAtt': [`Generation${lane}DeadLetterQueue5E6F7A8B`, 'Arn'] }, ScalingConfig: { MaximumConcurrency: 2 } },
    };
  }
  resources.EvaluationShardTask = {
    Type: 'AWS::ECS::TaskDefinition',
    Properties: { Cpu: '2048', Memory: '8192', RuntimePlatform: { CpuArchitecture: 'X86_64' } },
  };
  resources.OrchestratorRunWorkflow = {
    Type: 'AWS::StepFunctions::StateMachine',
    Properties: { DefinitionString: { 'Fn::Join': ['', ['{"StartAt":"Plan","States":{"EvaluateShards":{"Type":"Map","MaxConcurrency":10}}}']] } },
  };
  resources.GenerationGenerator = {
    Type: 'AWS::Lambda::Function',
    Properties: { MemorySize: 512, Environment: { Variables: { POWERTOOLS_SERVICE_NAME: 'rcb-generate' } } },
  };
  for (let i = 0; i < 33; i++) resources[`Alarm${i}`] = { Type: 'AWS::CloudWatch::Alarm', Properties: {} };
  resources.Dashboard = { Type: 'AWS::CloudWatch::Dashboard', Properties: {} };
  resources.Keys = { Type: 'AWS::SecretsManager::Secret', Properties: {} };
  resources.AlarmKey = { Type: 'AWS::KMS::Key', Properties: {} };
  for (const e of ['EcrApi', 'EcrDocker', 'Logs']) {
    resources[`${e}Endpoint`] = { Type: 'AWS::EC2::VPCEndpoint', Properties: { VpcEndpointType: 'Interface', SubnetIds: [{ Ref: 'A' }, { Ref: 'B' }] } };
  }
  return { Resources: resources };
}

function newAccount(overrides: { lambda?: number; spot?: number; onDemand?: number } = {}) {
  const quotas = mockClient(ServiceQuotasClient);
  const lambda = mockClient(LambdaClient);
  const cfn = mockClient(CloudFormationClient);
  const limit = overrides.lambda ?? 10;
  lambda.on(GetAccountSettingsCommand).resolves({ AccountLimit: { ConcurrentExecutions: limit, UnreservedConcurrentExecutions: limit } });
  quotas
    .on(GetServiceQuotaCommand, { ServiceCode: 'lambda', QuotaCode: 'L-B99A9384' })
    .resolves({ Quota: { ServiceCode: 'lambda', QuotaCode: 'L-B99A9384', QuotaName: 'Concurrent executions', Value: limit } });
  quotas.on(GetServiceQuotaCommand, { ServiceCode: 'fargate' }).rejects(new NoSuchResourceException({ message: 'no applied quota', $metadata: {} }));
  quotas
    .on(GetAWSDefaultServiceQuotaCommand, { ServiceCode: 'fargate', QuotaCode: 'L-3032A538' })
    .resolves({ Quota: { QuotaCode: 'L-3032A538', QuotaName: 'Fargate On-Demand vCPU resource count', Value: overrides.onDemand ?? 6 } });
  quotas
    .on(GetAWSDefaultServiceQuotaCommand, { ServiceCode: 'fargate', QuotaCode: 'L-36FBB829' })
    .resolves({ Quota: { QuotaCode: 'L-36FBB829', QuotaName: 'Fargate Spot vCPU resource count', Value: overrides.spot ?? 6 } });
  quotas.on(ListServiceQuotasCommand, { ServiceCode: 'states' }).resolves({ Quotas: [] });
  cfn.on(GetTemplateCommand).resolves({ TemplateBody: JSON.stringify(recordedTemplate()) });
  return { quotas, lambda, cfn };
}

/** A 32 x 5 sweep: 32 models over the four lanes, 5 samples, every paper of a 20-paper set. */
const SWEEP_32x5: RunDemand = {
  papers: 20,
  // One shard per paper and model at least (PlanRun's plan; a large paper's are sliced further).
  shards: 20 * 32,
  tasks: 212 * 32 * 5,
  models: Array.from({ length: 32 }, (_, i) => ({ id: `model-${i}`, lane: ['openai', 'anthropic', 'gemini', 'bedrock'][i % 4] })),
  modelCallSec: 30,
};

describe('rcb cloud doctor', () => {
  afterEach(() => jest.restoreAllMocks());

  it('reads the lanes, the shard size and the Map concurrency from the deployed template', async () => {
    const { cfn } = newAccount();
    const stack = await readDeployedStack(new CloudFormationClient({ region: 'us-east-1' }), 'Rcb');
    expect(cfn.commandCalls(GetTemplateCommand)[0].args[0].input).toEqual({ StackName: 'Rcb', TemplateStage: 'Processed' });
    expect(stack.lanes).toEqual({ openai: 8, anthropic: 4, gemini: 4, bedrock: 4 });
    expect(stack.deadLetterConcurrency).toBe(8);
    expect(stack.evaluationMaxConcurrency).toBe(10);
    expect(stack.sizes.shardTask).toEqual({ vcpu: 2, memoryGb: 8, architecture: 'X86_64' });
  });

  it('fails a 32 x 5 sweep on a new account, naming each quota to raise by service and quota code', async () => {
    newAccount();
    const quotas = await readAccountQuotas({ quotas: new ServiceQuotasClient({ region: 'us-east-1' }), lambda: new LambdaClient({ region: 'us-east-1' }) });
    expect(quotas.fargateSpotVcpu).toEqual({
      serviceCode: 'fargate',
      quotaCode: 'L-36FBB829',
      name: 'Fargate Spot vCPU resource count',
      value: 6,
      source: 'default',
    });
    const stack = deployedStackFromTemplate(recordedTemplate(), 'recorded');
    const { text, failed } = formatFit(checkFit(quotas, stack, SWEEP_32x5));
    process.stdout.write(text);
    expect(failed).toBe(true);
    expect(text).toContain(
      'FAIL  Lambda concurrency: 20 generator(s) on lane(s) openai, anthropic, gemini, bedrock + 8 dead-letter + 4 orchestration: needs 32, allowed 10',
    );
    expect(text).toContain('raise lambda L-B99A9384 (Concurrent executions) to at least 32');
    expect(text).toContain('raise fargate L-36FBB829 (Fargate Spot vCPU resource count) to at least 20');
    expect(text).toContain('warn  Fargate On-Demand vCPU');
    expect(text).toContain('ok    Step Functions state transitions per second');
  });

  it('passes once the quotas are raised, and checks the registry rate limits of each model', async () => {
    newAccount({ lambda: 1000, spot: 40, onDemand: 40 });
    const quotas = await readAccountQuotas({ quotas: new ServiceQuotasClient({ region: 'us-east-1' }), lambda: new LambdaClient({ region: 'us-east-1' }) });
    const stack = deployedStackFromTemplate(recordedTemplate(), 'recorded');
    expect(formatFit(checkFit(quotas, stack, SWEEP_32x5)).failed).toBe(false);
    const limited: RunDemand = { ...SWEEP_32x5, models: [{ id: 'slow-model', lane: 'openai', rate: { max_in_flight: 4, rpm: 10 } }] };
    const { text, failed } = formatFit(checkFit(quotas, stack, limited));
    expect(failed).toBe(true);
    expect(text).toContain('FAIL  slow-model: calls in flight (lane openai): needs 8, allowed 4');
    expect(text).toContain('FAIL  slow-model: requests per minute (8 in flight, 30 s a call): needs 16, allowed 10');
    expect(text).toContain("the registry's rate.max_in_flight of slow-model");
  });

  it("counts a sweep's shards, paper x model, against the Map's concurrency: not one task per paper", async () => {
    newAccount({ lambda: 1000, spot: 40, onDemand: 40 });
    const quotas = await readAccountQuotas({ quotas: new ServiceQuotasClient({ region: 'us-east-1' }), lambda: new LambdaClient({ region: 'us-east-1' }) });
    const wide = { ...deployedStackFromTemplate(recordedTemplate(), 'recorded'), evaluationMaxConcurrency: 100 };
    const { text, failed } = formatFit(checkFit(quotas, wide, SWEEP_32x5));
    // 100 of the 640 shard tasks at once, 2 vCPU each; 20 (one per paper) would have fitted 40 vCPU.
    expect(text).toContain('FAIL  Fargate Spot vCPU: 100 shard task(s) at once x 2 vCPU');
    expect(text).toContain('needs 200, allowed 40');
    expect(text).toContain('raise fargate L-36FBB829 (Fargate Spot vCPU resource count) to at least 200');
    expect(failed).toBe(true);
    // A run of one model on 3 papers starts 3 tasks, whatever the Map allows.
    const small = formatFit(checkFit(quotas, wide, { ...SWEEP_32x5, papers: 3, shards: 3, models: SWEEP_32x5.models.slice(0, 1) }));
    expect(small.text).toContain("ok    Fargate Spot vCPU: 3 shard task(s) at once x 2 vCPU (the cluster's default capacity): needs 6, allowed 40");
  });

  it('runs end to end from run flags and exits 1 on a new account', async () => {
    newAccount();
    let out = '';
    const code = await cloudDoctor(
      { stackName: 'Rcb', model: ['gpt-5.4'], samples: '1', paper: false, pset: join(__dirname, '..', '..', 'examples', 'pset-mini') },
      {
        cfn: new CloudFormationClient({ region: 'us-east-1' }),
        quotas: new ServiceQuotasClient({ region: 'us-east-1' }),
        lambda: new LambdaClient({ region: 'us-east-1' }),
        out: (t) => void (out += t),
      },
    );
    expect(code).toBe(1);
    expect(out).toMatch(/^run of gpt-5\.4: \d+ paper\(s\)/);
    expect(out).toContain('raise lambda L-B99A9384');
    expect(out).toContain('infrastructure total');
    expect(out).toContain('idle cost per month');
  });
});
