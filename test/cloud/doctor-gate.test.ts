/**
 * `rcb cloud run` (and `rcb sweep run --cloud`, which calls it) runs `rcb cloud doctor`
 * first: a run that does not fit the account is refused with the doctor's lines before
 * anything is uploaded or started, unless --skip-doctor (docs/cloud.md "Check the account
 * before a sweep"). The account and the deployed template are SDK answers
 * (aws-sdk-client-mock); the template is the synthesized stack's, so its reserved
 * orchestration concurrency is what the doctor reads.
 */
import { CloudFormationClient, DescribeStacksCommand, GetTemplateCommand } from '@aws-sdk/client-cloudformation';
import { GetAccountSettingsCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  GetAWSDefaultServiceQuotaCommand,
  GetServiceQuotaCommand,
  ListServiceQuotasCommand,
  NoSuchResourceException,
  ServiceQuotasClient,
} from '@aws-sdk/client-service-quotas';
import { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { join } from 'node:path';
import { deployedStackFromTemplate } from '../../adapters/aws/quotas';
import { HostedModels } from '../../adapters/models/hosted-models';
import { loadRegistry } from '../../adapters/models/registry';
import { envKeySource } from '../../core/keys';
import { cloudRun } from '../../bin/commands/cloud/run';
import type { CloudDeps } from '../../app/deployed-stack';
import { sharedStack } from '../infra/helpers';

const cfn = mockClient(CloudFormationClient);
const lambda = mockClient(LambdaClient);
const quotas = mockClient(ServiceQuotasClient);
afterAll(() => [cfn, lambda, quotas].forEach((m) => m.restore()));

/** An account with `limit` concurrent Lambda executions (`unreserved` of them unreserved) and AWS's default Fargate quotas. */
function account(limit: number, unreserved = limit) {
  [cfn, lambda, quotas].forEach((m) => m.reset());
  lambda.on(GetAccountSettingsCommand).resolves({ AccountLimit: { ConcurrentExecutions: limit, UnreservedConcurrentExecutions: unreserved } });
  quotas
    .on(GetServiceQuotaCommand, { ServiceCode: 'lambda', QuotaCode: 'L-B99A9384' })
    .resolves({ Quota: { ServiceCode: 'lambda', QuotaCode: 'L-B99A9384', QuotaName: 'Concurrent executions', Value: limit } });
  quotas.on(GetServiceQuotaCommand, { ServiceCode: 'fargate' }).rejects(new NoSuchResourceException({ message: 'no applied quota', $metadata: {} }));
  quotas
    .on(GetAWSDefaultServiceQuotaCommand, { ServiceCode: 'fargate', QuotaCode: 'L-3032A538' })
    .resolves({ Quota: { QuotaName: 'Fargate On-Demand vCPU resource count', Value: 400 } });
  quotas
    .on(GetAWSDefaultServiceQuotaCommand, { ServiceCode: 'fargate', QuotaCode: 'L-36FBB829' })
    .resolves({ Quota: { QuotaName: 'Fargate Spot vCPU resource count', Value: 400 } });
  quotas.on(ListServiceQuotasCommand, { ServiceCode: 'states' }).resolves({ Quotas: [] });
  cfn.on(GetTemplateCommand).resolves({ TemplateBody: JSON.stringify(sharedStack().template.toJSON()) });
  // Past the doctor, the run looks up the stack's outputs: this answer shows it got there.
  cfn.on(DescribeStacksCommand).rejects(new Error('reached DescribeStacks'));
}

const region = { region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } };
function deps(): CloudDeps & { errText: () => string } {
  let err = '';
  return {
    cfn: new CloudFormationClient(region),
    s3: new S3Client(region),
    doc: DynamoDBDocumentClient.from(new DynamoDBClient(region)),
    sfn: new SFNClient(region),
    out: () => undefined,
    err: (t) => void (err += t),
    sleep: async () => undefined,
    pollMs: 0,
    errText: () => err,
  };
}
const doctorDeps = () => ({
  cfn: new CloudFormationClient(region),
  quotas: new ServiceQuotasClient(region),
  lambda: new LambdaClient(region),
  out: () => undefined,
});
const hosted = () => new HostedModels(loadRegistry(), envKeySource({}));
const run = (extra = {}) => ({
  model: ['gpt-5.4'],
  samples: '1',
  paper: false,
  timeout: '60',
  concurrency: '16',
  executor: 'warm',
  stackName: 'Rcb',
  pset: join(__dirname, '..', '..', 'examples', 'pset-mini'),
  detach: true,
  ...extra,
});

describe('the doctor before a cloud run', () => {
  it('reads the orchestration functions reserved concurrency from the deployed template', () => {
    expect(deployedStackFromTemplate(sharedStack().template.toJSON(), 'test').reservedConcurrency).toBe(4 * 5);
  });

  it('refuses a run a new account cannot hold, with the doctor lines, before touching the stack', async () => {
    account(10);
    const d = deps();
    expect(await cloudRun(run(), hosted(), d, doctorDeps)).toBe(1);
    expect(d.errText()).toMatch(/doctor: FAIL {2}Lambda concurrency: .*allowed 10/);
    expect(d.errText()).toMatch(/doctor: raise lambda L-B99A9384 \(Concurrent executions\)/);
    expect(d.errText()).toContain('refused: the run does not fit the account (above); raise the quotas named, or start it anyway with --skip-doctor');
    expect(cfn.commandCalls(DescribeStacksCommand)).toHaveLength(0);
  });

  it('goes on to the stack when the account fits (reserved orchestration out of the unreserved pool)', async () => {
    account(1000, 980);
    const d = deps();
    await expect(cloudRun(run(), hosted(), d, doctorDeps)).rejects.toThrow('reached DescribeStacks');
    expect(d.errText()).toMatch(/doctor: ok +Lambda concurrency: .* \+ 0 orchestration \(20 reserved\): needs \d+, allowed 980/);
  });

  it('starts without asking the account with --skip-doctor', async () => {
    account(10);
    const d = deps();
    await expect(cloudRun(run({ skipDoctor: true }), hosted(), d, doctorDeps)).rejects.toThrow('reached DescribeStacks');
    expect(lambda.commandCalls(GetAccountSettingsCommand)).toHaveLength(0);
    expect(d.errText()).toContain('note: --skip-doctor');
  });

  it('refuses, naming the cause, when the doctor cannot read the account', async () => {
    account(1000);
    lambda.on(GetAccountSettingsCommand).rejects(new Error('AccessDeniedException: lambda:GetAccountSettings'));
    const d = deps();
    expect(await cloudRun(run(), hosted(), d, doctorDeps)).toBe(1);
    expect(d.errText()).toContain('doctor: the doctor could not check the account: AccessDeniedException');
  });
});
