/**
 * A provider is one module plus its registry lines (issue 24 item 2): a provider that exists
 * only in this file, added to a provider table beside the shipped ones (no registration
 * call: PROVIDER_MODULES stays a const map), is validated by the registry, called locally
 * through a run's client with its key and rate lane, priced by its entry, routed by the SQS
 * router to its own lane, and deployed as a lane queue at its module's concurrency in the
 * synthesized stack; everything derives from the module's fields.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { staticKeySource } from '../../core/keys';
import type { ModelClient, ModelRequest, ModelResponse } from '../../core/model';
import type { ProviderModule, ProviderTable } from '../../adapters/models/provider-module';
import { PROVIDER_MODULES } from '../../adapters/models/providers';
import { defaultLanes, laneOfProvider, providerLaneNames } from '../../adapters/models/provider-lanes';
import { answerParams } from '../../adapters/models/provider-common';
import { loadRegistry, RegistryError, type ModelEntry } from '../../adapters/models/registry';
import { HostedModels } from '../../adapters/models/hosted-models';
import { laneForProvider } from '../../adapters/aws/sqs-task-queue';
import { request } from './support/provider-contract';
import { tempDir } from '../helpers/cli';
import { logicalIdStartingWith, resourcesOfType, unsynthesizedStack } from '../infra/helpers';

/** What the fake provider's API was asked, by key. */
const calls: Array<{ key: string | undefined; model: string; prompt: string }> = [];

class AcmeClient implements ModelClient {
  readonly id: string;
  readonly params: Record<string, unknown>;
  readonly offline = false;
  constructor(
    private readonly entry: ModelEntry,
    private readonly key: string | undefined,
  ) {
    this.id = entry.id;
    this.params = answerParams(entry);
  }
  async complete(req: ModelRequest): Promise<ModelResponse> {
    calls.push({ key: this.key, model: this.entry.model, prompt: req.prompt.text });
    return { text: 'acme answer', finishReason: 'stop', usage: { inputTokens: 1000, cachedInputTokens: 0, outputTokens: 500, reasoningTokens: 0 } };
  }
}

/** The whole provider: its key, lane and lane concurrency, tokenizer, caching, client. */
const acmeProvider: ProviderModule = {
  name: 'acme',
  keyEnv: 'ACME_API_KEY',
  lane: 'acme-lane',
  laneMaxConcurrency: 3,
  cacheMinTokens: 0,
  tokenizer: () => 'approx',
  cacheMode: () => 'none',
  refusesTemperature: () => false,
  createClient: (entry, key) => new AcmeClient(entry, key),
};

const PROVIDERS: ProviderTable = { ...PROVIDER_MODULES, acme: acmeProvider };

/** Its registry lines, in a user's models file. */
function modelsFile(): string {
  const file = join(tempDir('rcb-acme-'), 'models.yaml');
  writeFileSync(
    file,
    [
      'models:',
      '  - id: acme-1',
      '    provider: acme',
      '    model: acme-large',
      '    params: { max_output_tokens: 4000, temperature: 0 }',
      '    prices: { input: 1.0, cached_input: 0.1, output: 2.0, as_of: "2026-12-01" }',
      '    knowledge_cutoff: "2025-06"',
      '    context_window: 128000',
      '',
    ].join('\n'),
  );
  return file;
}

describe('a provider added in one file', () => {
  it('is known to the registry through its table, and only there', () => {
    const file = modelsFile();
    const entries = loadRegistry({ userFile: file, providers: PROVIDERS });
    expect(entries.find((e) => e.id === 'acme-1')).toMatchObject({ provider: 'acme', model: 'acme-large' });
    expect(() => loadRegistry({ userFile: file })).toThrow(RegistryError);
    expect(() => loadRegistry({ userFile: file })).toThrow(/\(id "acme-1"\): provider: Invalid enum value/);
  });

  it('is called locally through a run client with its key, and priced by its entry', async () => {
    const entries = loadRegistry({ userFile: modelsFile(), providers: PROVIDERS });
    const hosted = new HostedModels(entries, staticKeySource({ ACME_API_KEY: 'acme-key' }), { providers: PROVIDERS });
    expect(await new HostedModels(entries, staticKeySource({}), { providers: PROVIDERS }).checkKeys(['acme-1'])).toEqual(['set ACME_API_KEY for acme-1']);

    const hit = hosted.resolve('acme-1')!;
    const res = await hit.client.complete(request());

    expect(res.text).toBe('acme answer');
    expect(calls.at(-1)).toMatchObject({ key: 'acme-key', model: 'acme-large' });
    expect(hit.cost.billed(res.usage)).toBeCloseTo((1000 * 1.0 + 500 * 2.0) / 1e6, 12);
    // The worst case: the prompt at the approximate tokenizer's bound plus max output, at the entry's prices.
    expect(hit.cost.worstCase(request().prompt)).toBeGreaterThanOrEqual((4000 * 2.0) / 1e6);
    // It runs through a rate lane of its own (provider|endpoint|region|model).
    expect(Object.keys(hosted.lanesSnapshot())).toEqual(['acme|||acme-large']);
    // No batch API and no background mode: a slow entry of it is refused, naming why.
    expect(hosted.resolveBatch('acme-1')).toBeUndefined();
  });

  it('is routed to its own lane by the SQS router', () => {
    const routing = { queueUrls: { openai: 'q-openai', 'acme-lane': 'q-acme' }, defaultLane: 'openai', providerLanes: providerLaneNames(PROVIDERS) };
    expect(laneForProvider('acme', routing)).toBe('acme-lane');
    expect(laneOfProvider('acme', PROVIDERS)).toEqual({ lane: 'acme-lane', maxConcurrency: 3 });
    // Without its module the router knows no lane of it: the default lane.
    expect(laneForProvider('acme', { ...routing, providerLanes: providerLaneNames() })).toBe('openai');
  });

  it('is a lane queue of the synthesized stack, at its module concurrency, in the PlanRun routing', () => {
    const lanes = defaultLanes(PROVIDERS);
    expect(lanes.at(-1)).toEqual({ name: 'acme-lane', maxConcurrency: 3 });

    const template = Template.fromStack(unsynthesizedStack({ lanes }));

    const queue = logicalIdStartingWith(template, 'AWS::SQS::Queue', 'GenerationAcmeLaneQueue');
    const mappings = Object.values(resourcesOfType(template, 'AWS::Lambda::EventSourceMapping'));
    const acme = mappings.find((m) => JSON.stringify(m.Properties?.EventSourceArn).includes(queue));
    expect(acme?.Properties?.ScalingConfig).toEqual({ MaximumConcurrency: 3 });
    // One generator mapping per lane (the dead-letter consumer has one per DLQ besides).
    expect(mappings.filter((m) => m.Properties?.ScalingConfig)).toHaveLength(lanes.length);
    const planRun = Object.values(resourcesOfType(template, 'AWS::Lambda::Function')).find((f) =>
      JSON.stringify(f.Properties?.Environment ?? {}).includes('RCB_LANE_QUEUES'),
    );
    expect(JSON.stringify(planRun?.Properties?.Environment)).toContain('acme-lane');
  });
});
