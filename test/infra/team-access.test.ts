/**
 * The runner and reader policies of the synthesized stack, evaluated as IAM would against the
 * stack's own resources (test/infra/iam-evaluator.ts): what each must allow for the commands a
 * team member runs, and what neither may do whatever else its role holds.
 */
import { ARTIFACT_PREFIXES } from '../../core/cloud/storage-layout';
import { RUN_STATUS_ATTRIBUTES } from '../../infra/team-access-construct';
import { logicalIdStartingWith, resourcesOfType, roleStatements, sharedStack } from './helpers';
import { STACK_ID, TemplateResolver, evaluate, type IamRequest, type PolicyStatement } from './iam-evaluator';

const { template } = sharedStack();
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, any> }>;
const resolver = new TemplateResolver(resources);

function policyStatements(prefix: string): PolicyStatement[] {
  const id = logicalIdStartingWith(template, 'AWS::IAM::ManagedPolicy', prefix);
  return resolver.resolve(resources[id].Properties!.PolicyDocument.Statement) as PolicyStatement[];
}
const runner = policyStatements('TeamAccessRunnerPolicy');
const reader = policyStatements('TeamAccessReaderPolicy');

const only = (type: string): string => {
  const ids = Object.keys(resourcesOfType(template, type));
  if (ids.length !== 1) throw new Error(`expected one ${type}, found ${ids.length}`);
  return ids[0];
};
const bucket = resolver.ref(only('AWS::S3::Bucket'));
const tableArn = resolver.arn(only('AWS::DynamoDB::Table'));
const workflow = resolver.ref(only('AWS::StepFunctions::StateMachine'));
const secret = resolver.ref(only('AWS::SecretsManager::Secret'));
const execution = `${workflow.replace(':stateMachine:', ':execution:')}:run-abc`;
const scheduleRole = resolver.arn(logicalIdStartingWith(template, 'AWS::IAM::Role', 'SchedulesStartRunRole'));
const schedule = (name: string) => `arn:aws:scheduler:us-east-1:123456789012:schedule/RcbTest-runs/${name}`;
const object = (key: string) => `arn:aws:s3:::${bucket}/${key}`;
const item = (action: string, pk: string, attributes?: string[]): IamRequest => ({
  action: `dynamodb:${action}`,
  resource: tableArn,
  context: { 'dynamodb:LeadingKeys': [pk], ...(attributes ? { 'dynamodb:Attributes': attributes } : {}) },
});

/** What `rcb cloud status|results` read (app/deployed-stack.ts, core/cloud/run-results.ts). */
const READS: Array<[string, IamRequest]> = [
  ['find the stack outputs', { action: 'cloudformation:DescribeStacks', resource: STACK_ID }],
  ['read a run item', item('GetItem', 'RUN#abc')],
  ['query verdicts', item('Query', 'RUN#abc')],
  ['read completions', item('BatchGetItem', 'TASK#t1')],
  ['list runs on the index', { ...item('Query', 'RUNS'), resource: `${tableArn}/index/gsi1` }],
  ['read a report', { action: 's3:GetObject', resource: object('runs/abc/reports/report.html') }],
  ['list a run’s reports', { action: 's3:ListBucket', resource: `arn:aws:s3:::${bucket}`, context: { 's3:prefix': 'runs/abc/reports/' } }],
];

/** What `rcb cloud run|cancel` do besides reading. */
const RUNS: Array<[string, IamRequest]> = [
  ['start a run', { action: 'states:StartExecution', resource: workflow }],
  ['follow a run', { action: 'states:DescribeExecution', resource: execution }],
  ['stop a run (cancel --now)', { action: 'states:StopExecution', resource: execution }],
  ['upload a pset bundle', { action: 's3:PutObject', resource: object('psets/0123abcd.json') }],
  ['upload a replay file', { action: 's3:PutObject', resource: object('psets/replays/0123.jsonl') }],
  ['mark a run cancelled', item('UpdateItem', 'RUN#abc', RUN_STATUS_ATTRIBUTES)],
  ['add a schedule', { action: 'scheduler:CreateSchedule', resource: schedule('nightly') }],
  ['read a schedule', { action: 'scheduler:GetSchedule', resource: schedule('nightly') }],
  ['remove a schedule', { action: 'scheduler:DeleteSchedule', resource: schedule('nightly') }],
  ['list the schedules', { action: 'scheduler:ListSchedules', resource: '*' }],
  ['pass the schedule role to Scheduler', { action: 'iam:PassRole', resource: scheduleRole, context: { 'iam:PassedToService': 'scheduler.amazonaws.com' } }],
];

/** What neither may do. */
const NEVER: Array<[string, IamRequest]> = [
  ['read the provider keys', { action: 'secretsmanager:GetSecretValue', resource: secret }],
  ['rewrite the provider keys', { action: 'secretsmanager:PutSecretValue', resource: secret }],
  ['update the stack', { action: 'cloudformation:UpdateStack', resource: STACK_ID }],
  ['delete the stack', { action: 'cloudformation:DeleteStack', resource: STACK_ID }],
  ['execute a change set', { action: 'cloudformation:ExecuteChangeSet', resource: STACK_ID }],
  ['put a verdict item', item('PutItem', 'RUN#abc')],
  ['update a verdict item', item('UpdateItem', 'RUN#abc', ['pk', 'sk', 'verdict', 'judge'])],
  ['write a completion', item('UpdateItem', 'TASK#t1', ['pk', 'sk', 'status'])],
  ['delete the table', { action: 'dynamodb:DeleteTable', resource: tableArn }],
  ['scan the table', { action: 'dynamodb:Scan', resource: tableArn }],
  ['write shard verdicts', { action: 's3:PutObject', resource: object('runs/abc/evaluation/paper/verdicts.json') }],
  ['overwrite a report', { action: 's3:PutObject', resource: object('runs/abc/reports/report.json') }],
  ['delete a pset', { action: 's3:DeleteObject', resource: object('psets/0123abcd.json') }],
  ['start another workflow', { action: 'states:StartExecution', resource: workflow.replace(/:stateMachine:.*/, ':stateMachine:Other') }],
  ['read another bucket', { action: 's3:GetObject', resource: 'arn:aws:s3:::someone-else/runs/x' }],
  ['pass the schedule role to another service', { action: 'iam:PassRole', resource: scheduleRole, context: { 'iam:PassedToService': 'lambda.amazonaws.com' } }],
  ['add a schedule in another group', { action: 'scheduler:CreateSchedule', resource: 'arn:aws:scheduler:us-east-1:123456789012:schedule/default/x' }],
  ['pass a role', { action: 'iam:PassRole', resource: resolver.arn(Object.keys(resourcesOfType(template, 'AWS::IAM::Role'))[0]) }],
];

describe('runner policy', () => {
  it.each([...READS, ...RUNS])('allows: %s', (_name, request) => {
    expect(evaluate(runner, request)).toBe('allowed');
  });

  it.each(NEVER)('refuses: %s', (_name, request) => {
    expect(evaluate(runner, request)).not.toBe('allowed');
  });

  it('denies the keys, the stack and verdict writes explicitly, so a broader policy of the same role cannot grant them', () => {
    const withAdmin: PolicyStatement[] = [...runner, { Effect: 'Allow', Action: '*', Resource: '*' }];
    for (const [name, request] of NEVER.filter(([n]) => /keys|stack|change set|verdict|report|delete the table/.test(n))) {
      expect([name, evaluate(withAdmin, request)]).toEqual([name, 'explicitly denied']);
    }
  });
});

describe('reader policy', () => {
  it.each(READS)('allows: %s', (_name, request) => {
    expect(evaluate(reader, request)).toBe('allowed');
  });

  it.each([...RUNS, ...NEVER])('refuses: %s', (_name, request) => {
    expect(evaluate(reader, request)).not.toBe('allowed');
  });
});

describe('both policies', () => {
  it('allow nothing outside the stack’s own resources (no Resource "*", every ARN one of the template’s)', () => {
    const own = new Set<string>([STACK_ID]);
    for (const id of Object.keys(resources)) {
      own.add(resolver.arn(id));
      own.add(resolver.ref(id));
    }
    own.add(schedule('').slice(0, -1));
    // ListSchedules names no resource (its group is a request parameter): the one "*".
    for (const s of [...runner, ...reader].filter((x) => x.Effect === 'Allow' && x.Sid !== 'ListRunSchedules')) {
      for (const r of [s.Resource].flat() as string[]) {
        expect(r).not.toBe('*');
        expect([
          s.Sid,
          [...own].some((arn) => r === arn || r.startsWith(`${arn}/`) || r.startsWith(`${arn.replace(':stateMachine:', ':execution:')}:`)),
        ]).toEqual([s.Sid, true]);
      }
    }
  });

  it('are stack outputs a team attaches to its roles', () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(resolver.resolve(outputs.RunnerPolicyArn.Value)).toMatch(/^arn:aws:iam::\d+:policy\/TeamAccessRunnerPolicy/);
    expect(resolver.resolve(outputs.ReaderPolicyArn.Value)).toMatch(/^arn:aws:iam::\d+:policy\/TeamAccessReaderPolicy/);
  });

  it('read uploaded pset keys only as the runner (the reader reads runs/ alone)', () => {
    const request = { action: 's3:GetObject', resource: object(`${ARTIFACT_PREFIXES.psets}0123.json`) };
    expect([evaluate(runner, request), evaluate(reader, request)]).toEqual(['allowed', 'implicitly denied']);
  });
});

describe('the schedule role', () => {
  it('may start the run workflow and nothing else', () => {
    const id = logicalIdStartingWith(template, 'AWS::IAM::Role', 'SchedulesStartRunRole');
    const statements = resolver.resolve(roleStatements(template, id)) as PolicyStatement[];
    expect(evaluate(statements, { action: 'states:StartExecution', resource: workflow })).toBe('allowed');
    for (const request of [...NEVER, ...RUNS.filter(([n]) => n !== 'start a run')].map(([, r]) => r)) {
      expect([request.action, evaluate(statements, request)]).toEqual([request.action, 'implicitly denied']);
    }
    const trust = resolver.resolve(resources[id].Properties!.AssumeRolePolicyDocument.Statement);
    expect(trust).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: { StringEquals: { 'aws:SourceAccount': '123456789012' } },
      },
    ]);
  });
});

describe('the evaluator', () => {
  const statement = (s: Partial<PolicyStatement>): PolicyStatement[] => [{ Effect: 'Allow', Action: 's3:GetObject', Resource: '*', ...s }];

  it('takes ForAllValues on a missing key as holding, as IAM does, and a plain operator as failing', () => {
    const forAll = statement({ Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RUN#*'] } } });
    const plain = statement({ Condition: { StringLike: { 's3:prefix': ['runs/*'] } } });
    expect([evaluate(forAll, { action: 's3:GetObject', resource: 'x' }), evaluate(plain, { action: 's3:GetObject', resource: 'x' })]).toEqual([
      'allowed',
      'implicitly denied',
    ]);
  });

  it('matches NotAction, action case and wildcards as IAM does', () => {
    const deny: PolicyStatement[] = [...statement({ Action: '*' }), { Effect: 'Deny', NotAction: ['s3:Get*'], Resource: 'arn:aws:s3:::b/*' }];
    expect(evaluate(deny, { action: 'S3:getobject', resource: 'arn:aws:s3:::b/k' })).toBe('allowed');
    expect(evaluate(deny, { action: 's3:PutObject', resource: 'arn:aws:s3:::b/k' })).toBe('explicitly denied');
    expect(evaluate(deny, { action: 's3:PutObject', resource: 'arn:aws:s3:::c/k' })).toBe('allowed');
  });
});
