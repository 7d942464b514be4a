/**
 * The infrastructure cost rcb prints is computed from the stack's sizes: here those sizes are
 * read from the synthesized default stack and held equal to DEFAULT_STACK_SIZES (which
 * `rcb estimate` uses without synthesizing), and the idle cost is checked against the counts
 * of billed resources in the template.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DEFAULT_INFRA_ASSUMPTIONS,
  DEFAULT_STACK_SIZES,
  estimateRunInfra,
  formatIdle,
  formatRunInfra,
  generationWallSec,
  idleMonthlyCost,
} from '../../core/cost/infra-cost';
import { INFRA_PRICES } from '../../core/cost/infra-prices';
import { stackSizesFromTemplate } from '../../core/cost/infra-sizes';
import { deployedStackFromTemplate } from '../../adapters/aws/quotas';
import { DEFAULT_LANES } from '../../infra/config';
import { REPO_ROOT, resourcesOfType, sharedStack } from './helpers';

describe('infrastructure cost from the template', () => {
  const template = () => sharedStack().template;

  it('reads the default stack sizes that rcb estimate uses', () => {
    expect(stackSizesFromTemplate(template().toJSON())).toEqual(DEFAULT_STACK_SIZES);
  });

  it("gives rcb cloud doctor the lanes, dead-letter consumers and Map concurrency of cdk.json's stack", () => {
    // What GetTemplate returns for a deployed stack is this template: the doctor's reading of it.
    const stack = deployedStackFromTemplate(template().toJSON(), 'synthesized');
    expect(stack.lanes).toEqual(Object.fromEntries(DEFAULT_LANES.map((l) => [l.name, l.maxConcurrency])));
    expect(stack.deadLetterConcurrency).toBe(2 * DEFAULT_LANES.length);
    expect(stack.evaluationMaxConcurrency).toBe(10);
    expect(stack.sizes).toEqual(DEFAULT_STACK_SIZES);
  });

  it('counts every billed idle resource of the template', () => {
    const t = template();
    const count = (type: string) => Object.keys(resourcesOfType(t, type)).length;
    const interfaceEndpoints = Object.values(resourcesOfType(t, 'AWS::EC2::VPCEndpoint')).filter((r) => r.Properties?.VpcEndpointType === 'Interface');
    const sizes = stackSizesFromTemplate(t.toJSON());
    expect(sizes.alarms).toBe(count('AWS::CloudWatch::Alarm'));
    expect(sizes.dashboards).toBe(count('AWS::CloudWatch::Dashboard'));
    expect(sizes.queuePollers).toBe(count('AWS::Lambda::EventSourceMapping'));
    expect(sizes.kmsKeys).toBe(count('AWS::KMS::Key'));
    expect(sizes.secrets).toBe(count('AWS::SecretsManager::Secret'));
    expect(sizes.interfaceEndpointAzs).toEqual(interfaceEndpoints.map((r) => r.Properties?.SubnetIds.length));
    const idle = idleMonthlyCost(sizes);
    const byItem = Object.fromEntries(idle.lines.map((l) => [l.item, l.usd]));
    expect(byItem['CloudWatch alarms']).toBeCloseTo(count('AWS::CloudWatch::Alarm') * INFRA_PRICES.cloudwatch.alarmMonth, 6);
    expect(byItem['interface endpoints']).toBeCloseTo(interfaceEndpoints.length * 2 * 0.01 * 730, 6);
    expect(idle.totalUsd).toBeCloseTo(
      idle.lines.reduce((s, l) => s + l.usd, 0),
      9,
    );
    process.stdout.write(formatIdle(idle));
  });
});

describe('the idle cost docs/cloud.md states', () => {
  const doc = () => readFileSync(join(REPO_ROOT, 'docs', 'cloud.md'), 'utf8');
  const marked = (name: string) => {
    const m = new RegExp(`<!-- ${name} -->([\\s\\S]*?)<!-- /${name} -->`).exec(doc());
    if (!m) throw new Error(`docs/cloud.md has no ${name} mark`);
    return m[1].trim();
  };
  const dollars = (x: number) => `$${x.toFixed(2)}`;

  it('is the table the code computes from the synthesized template, figure for figure', () => {
    const text = doc();
    const block = text.slice(text.indexOf('<!-- idle-cost:begin -->'), text.indexOf('<!-- idle-cost:end -->'));
    const fenced = /```text\n([\s\S]*?)```/.exec(block);
    expect(fenced?.[1]).toBe(formatIdle(idleMonthlyCost(stackSizesFromTemplate(sharedStack().template.toJSON()))));
  });

  it('states the endpoints in two AZs, in one, and the parked stack as computed', () => {
    const sizes = stackSizesFromTemplate(sharedStack().template.toJSON());
    const endpoints = (s: typeof sizes) => idleMonthlyCost(s).lines.find((l) => l.item === 'interface endpoints')!.usd;
    // Two AZs unless configured otherwise: every interface endpoint of the default stack is in 2 subnets.
    expect(sizes.interfaceEndpointAzs).toEqual([2, 2, 2]);
    expect(marked('idle-endpoints-2az')).toBe(dollars(endpoints(sizes)));
    const oneAz = { ...sizes, interfaceEndpointAzs: sizes.interfaceEndpointAzs.map(() => 1) };
    expect(marked('idle-endpoints-1az')).toBe(dollars(endpoints(oneAz)));
    expect(marked('idle-total-1az')).toBe(dollars(idleMonthlyCost(oneAz).totalUsd));
    expect(marked('idle-total-parked')).toBe(dollars(idleMonthlyCost({ ...sizes, interfaceEndpointAzs: [] }).totalUsd));
  });
});

describe('run infrastructure estimate', () => {
  // The largest run the default stack admits a sweep of: every paper of the set, 32 models x 5 samples.
  // 8 models on each of the four provider lanes, at the default lanes' concurrency (anthropic, gemini, bedrock 4; openai 8).
  const perLane = 8 * 212 * 5;
  const full = {
    papers: 20,
    shards: 20 * 32,
    tasks: 212 * 32 * 5,
    interactiveCalls: 212 * 32 * 5,
    lanes: [8, 4, 4, 4].map((concurrency) => ({ calls: perLane, concurrency })),
  };

  it('prices Fargate on Spot below on demand and sums every line', () => {
    const e = estimateRunInfra(full);
    expect(e.fargateSpot.usd).toBeLessThan(e.fargateOnDemand.usd);
    const rest = e.lines.reduce((s, l) => s + l.usd, 0);
    expect(e.totalUsd).toBeCloseTo(e.fargateSpot.usd + rest, 9);
    expect(e.totalOnDemandUsd).toBeCloseTo(e.fargateOnDemand.usd + rest, 9);
    expect(e.lines.map((l) => l.item)).toEqual(['Lambda', 'Step Functions', 'DynamoDB', 'S3 requests', 'CloudWatch Logs', 'SQS', 'X-Ray']);
    for (const l of [e.fargateSpot, ...e.lines]) expect(l.usd).toBeGreaterThan(0);
  });

  it('bills a shard task at least the Fargate minimum and includes the image pull', () => {
    const tiny = estimateRunInfra({ papers: 1, shards: 1, tasks: 1, interactiveCalls: 0, lanes: [] }, DEFAULT_STACK_SIZES, {
      ...DEFAULT_INFRA_ASSUMPTIONS,
      imagePullSec: 0,
      environmentCheckSec: 0,
      testSecPerTask: 1,
    });
    const { vcpu, memoryGb } = DEFAULT_STACK_SIZES.shardTask;
    const p = INFRA_PRICES.fargate.spot.X86_64;
    expect(tiny.fargateSpot.usd).toBeCloseTo((60 / 3600) * (vcpu * p.vcpuHour + memoryGb * p.gbHour), 9);
    const withPull = estimateRunInfra({ papers: 1, shards: 1, tasks: 1, interactiveCalls: 0, lanes: [] });
    expect(withPull.fargateSpot.arithmetic).toContain('pull 90 s');
  });

  it('pulls the image once per shard (paper x model) and checks each paper once, as the workflow runs them', () => {
    const a = { ...DEFAULT_INFRA_ASSUMPTIONS, testSecPerTask: 0 };
    // One shard per paper would price 20 pulls; the sweep starts 640 shard tasks.
    const perPaper = estimateRunInfra({ ...full, shards: 20 }, DEFAULT_STACK_SIZES, a);
    const perShard = estimateRunInfra(full, DEFAULT_STACK_SIZES, a);
    const { vcpu, memoryGb } = DEFAULT_STACK_SIZES.shardTask;
    const p = INFRA_PRICES.fargate.spot.X86_64;
    const hourly = vcpu * p.vcpuHour + memoryGb * p.gbHour;
    const billed = (sec: number) => Math.max(INFRA_PRICES.fargate.minimumBilledSec, sec);
    expect(perShard.fargateSpot.usd).toBeCloseTo((640 * billed(a.imagePullSec + (20 * a.environmentCheckSec) / 640) * hourly) / 3600, 9);
    expect(perPaper.fargateSpot.usd).toBeCloseTo((20 * billed(a.imagePullSec + a.environmentCheckSec) * hourly) / 3600, 9);
    expect(perShard.fargateSpot.arithmetic).toMatch(/^640 shard\(s\) of 20 paper\(s\)/);
  });

  it('lasts as long as its longest lane: lanes generate side by side, each at its own concurrency', () => {
    const e = estimateRunInfra(full, DEFAULT_STACK_SIZES, { ...DEFAULT_INFRA_ASSUMPTIONS, modelCallSec: 30 });
    // 8,480 calls of 30 s at 4 at a time, not 33,920 calls over the summed 20.
    expect(e.generationWallSec).toBe((perLane * 30) / 4);
    expect(
      generationWallSec(
        [
          { calls: 100, concurrency: 10 },
          { calls: 0, concurrency: 1 },
        ],
        60,
      ),
    ).toBe(600);
    expect(generationWallSec([], 60)).toBe(0);
    expect(formatRunInfra(e)).toContain('generation about 17.7 h (the longest lane at its concurrency)');
  });

  it('formats every line with its arithmetic', () => {
    const text = formatRunInfra(estimateRunInfra(full), idleMonthlyCost(DEFAULT_STACK_SIZES));
    for (const item of [
      'Fargate Spot (X86_64)',
      'Fargate on demand (X86_64)',
      'Lambda',
      'Step Functions',
      'DynamoDB',
      'S3 requests',
      'CloudWatch Logs',
      'SQS',
      'X-Ray',
    ]) {
      expect(text).toContain(item);
    }
    expect(text).toMatch(/infrastructure total \$\d+\.\d\d on Spot, \$\d+\.\d\d on demand/);
    expect(text).toMatch(/idle stack \$\d+\.\d\d per month/);
  });
});
