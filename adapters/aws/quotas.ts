/**
 * What `rcb cloud doctor` reads of an account and a deployed stack: the quotas a run draws on
 * (Service Quotas, with the AWS default where the account has no applied value; Lambda's
 * account settings) and the deployed template (CloudFormation GetTemplate), whose sizes and
 * lanes decide a run's peak use. The checks themselves are pure: adapters/aws/quotas-fit.ts.
 */
import { type CloudFormationClient, GetTemplateCommand } from '@aws-sdk/client-cloudformation';
import { GetAccountSettingsCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { GetAWSDefaultServiceQuotaCommand, GetServiceQuotaCommand, ListServiceQuotasCommand, type ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import { stackSizesFromTemplate, type StackSizes } from '../../core/cost/infra-sizes';

/** A quota as Service Quotas names it: what an operator asks to raise. */
export interface QuotaRef {
  serviceCode: string;
  quotaCode: string;
  name: string;
}

export interface QuotaValue extends QuotaRef {
  value: number;
  /** 'applied' (this account's value), 'default' (AWS's default: the account has none applied), 'documented' (not in Service Quotas). */
  source: 'applied' | 'default' | 'documented';
}

/** The quotas doctor checks, by the code Service Quotas lists them under. */
export const QUOTAS = {
  lambdaConcurrency: { serviceCode: 'lambda', quotaCode: 'L-B99A9384', name: 'Concurrent executions' },
  fargateOnDemandVcpu: { serviceCode: 'fargate', quotaCode: 'L-3032A538', name: 'Fargate On-Demand vCPU resource count' },
  fargateSpotVcpu: { serviceCode: 'fargate', quotaCode: 'L-36FBB829', name: 'Fargate Spot vCPU resource count' },
} as const satisfies Record<string, QuotaRef>;

/**
 * Standard workflows' StateTransition throttle (token bucket) where Service Quotas does not
 * list it: the documented us-east-1 default, refill per second.
 */
export const DOCUMENTED_STATE_TRANSITION_RATE: QuotaValue = {
  serviceCode: 'states',
  quotaCode: 'StateTransition',
  name: 'StateTransition throttle token refill rate per second (standard workflows)',
  value: 800,
  source: 'documented',
};

export interface AccountQuotas {
  lambdaConcurrency: QuotaValue;
  /** Lambda GetAccountSettings: what is left for functions without reserved concurrency. */
  lambdaUnreservedConcurrency: number;
  fargateOnDemandVcpu: QuotaValue;
  fargateSpotVcpu: QuotaValue;
  stateTransitionRate: QuotaValue;
}

export interface QuotaClients {
  quotas: ServiceQuotasClient;
  lambda: LambdaClient;
}

async function quotaValue(client: ServiceQuotasClient, ref: QuotaRef): Promise<QuotaValue> {
  const key = { ServiceCode: ref.serviceCode, QuotaCode: ref.quotaCode };
  try {
    const { Quota } = await client.send(new GetServiceQuotaCommand(key));
    if (Quota?.Value !== undefined) return { ...ref, name: Quota.QuotaName ?? ref.name, value: Quota.Value, source: 'applied' };
  } catch (err) {
    if ((err as Error).name !== 'NoSuchResourceException') throw err;
  }
  const { Quota } = await client.send(new GetAWSDefaultServiceQuotaCommand(key));
  if (Quota?.Value === undefined) throw new Error(`Service Quotas has no value for ${ref.serviceCode} ${ref.quotaCode} (${ref.name})`);
  return { ...ref, name: Quota.QuotaName ?? ref.name, value: Quota.Value, source: 'default' };
}

/** The StateTransition rate as Service Quotas lists it for `states`, else the documented default. */
async function stateTransitionRate(client: ServiceQuotasClient): Promise<QuotaValue> {
  let token: string | undefined;
  do {
    const page = await client.send(new ListServiceQuotasCommand({ ServiceCode: 'states', NextToken: token }));
    const found = page.Quotas?.find((q) => /StateTransition/i.test(q.QuotaName ?? '') && /refill/i.test(q.QuotaName ?? ''));
    if (found?.QuotaCode && found.Value !== undefined) {
      return { serviceCode: 'states', quotaCode: found.QuotaCode, name: found.QuotaName ?? 'StateTransition', value: found.Value, source: 'applied' };
    }
    token = page.NextToken;
  } while (token);
  return DOCUMENTED_STATE_TRANSITION_RATE;
}

export async function readAccountQuotas(clients: QuotaClients): Promise<AccountQuotas> {
  const settings = await clients.lambda.send(new GetAccountSettingsCommand({}));
  const limit = settings.AccountLimit;
  if (limit?.ConcurrentExecutions === undefined) throw new Error('Lambda GetAccountSettings answered no AccountLimit.ConcurrentExecutions');
  const applied = await quotaValue(clients.quotas, QUOTAS.lambdaConcurrency);
  return {
    // GetAccountSettings is the account's own figure, authoritative over a default.
    lambdaConcurrency: { ...applied, value: limit.ConcurrentExecutions },
    lambdaUnreservedConcurrency: limit.UnreservedConcurrentExecutions ?? limit.ConcurrentExecutions,
    fargateOnDemandVcpu: await quotaValue(clients.quotas, QUOTAS.fargateOnDemandVcpu),
    fargateSpotVcpu: await quotaValue(clients.quotas, QUOTAS.fargateSpotVcpu),
    stateTransitionRate: await stateTransitionRate(clients.quotas),
  };
}

/** What a run's peak depends on in the deployed stack. */
export interface DeployedStack {
  sizes: StackSizes;
  /** Generator lanes: name (from the queue's logical id) -> maximum concurrency. */
  lanes: Record<string, number>;
  /** Maximum concurrency of the dead-letter consumers, summed. */
  deadLetterConcurrency: number;
  /** Shards evaluated at once per run (the Map's MaxConcurrency). */
  evaluationMaxConcurrency: number;
  /** Concurrent executions the stack's functions reserve (ReservedConcurrentExecutions), summed: outside the unreserved pool. */
  reservedConcurrency: number;
}

type Resource = { Type: string; Properties?: Record<string, any> };

/** Reads a template of the rcb stack (JSON, as CloudFormation returns it). */
export function deployedStackFromTemplate(template: { Resources?: Record<string, Resource> }, origin: string): DeployedStack {
  const lanes: Record<string, number> = {};
  let deadLetterConcurrency = 0;
  for (const r of Object.values(template.Resources ?? {})) {
    if (r.Type !== 'AWS::Lambda::EventSourceMapping') continue;
    const source = JSON.stringify(r.Properties?.EventSourceArn ?? '');
    const concurrency = Number(r.Properties?.ScalingConfig?.MaximumConcurrency ?? 0);
    const queue = /Generation([A-Za-z0-9]+?)(DeadLetter)?Queue[A-F0-9]{8}/.exec(source);
    if (!queue) continue;
    if (queue[2]) deadLetterConcurrency += concurrency || 2;
    else lanes[queue[1].toLowerCase()] = concurrency;
  }
  if (!Object.keys(lanes).length) throw new Error(`${origin}: no generation lane (SQS event source of a Generation*Queue) in the template`);
  const reservedConcurrency = Object.values(template.Resources ?? {})
    .filter((r) => r.Type === 'AWS::Lambda::Function')
    .reduce((sum, r) => sum + Number(r.Properties?.ReservedConcurrentExecutions ?? 0), 0);
  const maps = [...JSON.stringify(template).matchAll(/\\"MaxConcurrency\\":(\d+)/g)].map((m) => Number(m[1]));
  if (!maps.length) throw new Error(`${origin}: no Map MaxConcurrency in the run workflow's definition`);
  return { sizes: stackSizesFromTemplate(template), lanes, deadLetterConcurrency, evaluationMaxConcurrency: Math.max(...maps), reservedConcurrency };
}

export async function readDeployedStack(cfn: CloudFormationClient, stackName: string): Promise<DeployedStack> {
  const { TemplateBody } = await cfn.send(new GetTemplateCommand({ StackName: stackName, TemplateStage: 'Processed' }));
  if (!TemplateBody) throw new Error(`stack ${stackName}: CloudFormation returned no template`);
  let template: unknown;
  try {
    template = JSON.parse(TemplateBody);
  } catch {
    throw new Error(`stack ${stackName}: the template is not JSON (not an rcb stack deployed by cdk?)`);
  }
  return deployedStackFromTemplate(template as { Resources?: Record<string, Resource> }, `stack ${stackName}`);
}
