import { App } from 'aws-cdk-lib';
import { ConfigError, DEFAULT_LANES, configFromContext, validateLanes } from '../../infra/config';
import { cdkJsonContext } from './helpers';

const contextOf = (context: Record<string, unknown>) => configFromContext(new App({ context }).node);

describe('configFromContext', () => {
  it('reads the cdk.json context: the default lanes and the documented defaults', () => {
    const config = contextOf(cdkJsonContext());
    expect(config).toMatchObject({
      stackName: 'Rcb',
      lanes: DEFAULT_LANES.map((l) => ({ ...l, batchSize: 1 })),
      evaluationMaxConcurrency: 10,
      taskCpu: 2048,
      taskMemoryMiB: 8192,
      cpuArchitecture: 'X86_64',
      interfaceEndpoints: true,
      dnsFirewall: false,
      artifactRetentionDays: 180,
      retainData: true,
    });
    expect(config.account).toBeUndefined();
    expect(config.region).toBeUndefined();
  });

  it('accepts the string forms `cdk -c key=value` produces', () => {
    const config = contextOf({
      'rcb:lanes': '[{"name":"openai","maxConcurrency":16,"batchSize":2}]',
      'rcb:evaluationMaxConcurrency': '25',
      'rcb:interfaceEndpoints': 'false',
      'rcb:alarmEmail': 'ops@example.org',
      'rcb:bedrockResourceArns': '["arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-x"]',
    });
    expect(config.lanes).toEqual([{ name: 'openai', maxConcurrency: 16, batchSize: 2 }]);
    expect(config.evaluationMaxConcurrency).toBe(25);
    expect(config.interfaceEndpoints).toBe(false);
    expect(config.alarmEmail).toBe('ops@example.org');
    expect(config.bedrockResourceArns).toEqual(['arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-x']);
  });

  it('reads the Bedrock batch roles and S3 locations of the batch lane', () => {
    const config = contextOf({ 'rcb:bedrockBatch': '{"roleArns":["arn:aws:iam::123456789012:role/rcb-batch"],"s3Uris":["s3://team-bucket/rcb"]}' });
    expect(config.bedrockBatch).toEqual({ roleArns: ['arn:aws:iam::123456789012:role/rcb-batch'], s3Uris: ['s3://team-bucket/rcb'] });
  });

  it('leaves absent keys undefined so construct defaults apply', () => {
    const config = contextOf({});
    expect(config.lanes).toBeUndefined();
    expect(config.taskCpu).toBeUndefined();
    expect(config.stackName).toBe('Rcb');
  });

  it.each([
    [{ 'rcb:evaluationMaxConcurrency': 'many' }, 'rcb:evaluationMaxConcurrency'],
    [{ 'rcb:interfaceEndpoints': 'yes' }, 'rcb:interfaceEndpoints'],
    [{ 'rcb:dnsFirewall': 'on' }, 'rcb:dnsFirewall'],
    [{ 'rcb:cpuArchitecture': 'arm' }, 'rcb:cpuArchitecture'],
    [{ 'rcb:alarmEmail': 'not-an-address' }, 'rcb:alarmEmail'],
    [{ 'rcb:lanes': '[{"name":"openai"' }, 'rcb:lanes'],
    [{ 'rcb:stackName': '1bad name' }, 'rcb:stackName'],
    [{ 'rcb:bedrockResourceArns': '["model-x"]' }, 'rcb:bedrockResourceArns'],
    [{ 'rcb:bedrockBatch': '{"roleArns":["role-x"],"s3Uris":["s3://b"]}' }, 'rcb:bedrockBatch'],
    [{ 'rcb:bedrockBatch': '{"roleArns":["arn:aws:iam::123456789012:role/r"],"s3Uris":["https://b"]}' }, 'rcb:bedrockBatch'],
  ])('rejects %j naming the key', (context, key) => {
    expect(() => contextOf(context)).toThrow(new RegExp(`^rcb config: ${key.replace(/[:]/g, '\\:')}`));
  });
});

describe('validateLanes', () => {
  it('defaults the batch size to 1', () => {
    expect(validateLanes([{ name: 'anthropic', maxConcurrency: 4 }])).toEqual([{ name: 'anthropic', maxConcurrency: 4, batchSize: 1 }]);
  });

  it.each([
    [[], 'needs at least one lane'],
    [[{ name: 'OpenAI', maxConcurrency: 4 }], 'rcb:lanes[0].name'],
    [
      [
        { name: 'openai', maxConcurrency: 4 },
        { name: 'openai', maxConcurrency: 2 },
      ],
      'duplicate lane',
    ],
    [[{ name: 'openai', maxConcurrency: 1 }], 'rcb:lanes[0].maxConcurrency: must be an integer in 2..1000'],
    [[{ name: 'openai', maxConcurrency: 4, batchSize: 11 }], 'rcb:lanes[0].batchSize'],
  ])('rejects %j', (lanes, message) => {
    expect(() => validateLanes(lanes as never)).toThrow(ConfigError);
    expect(() => validateLanes(lanes as never)).toThrow(message);
  });
});
