/**
 * One provider lane table (adapters/models/provider-lanes.ts): every provider module, the SQS
 * router and the stack's default lanes agree with it.
 */
import { PROVIDER_LANES, defaultLanes } from '../../adapters/models/provider-lanes';
import { PROVIDER_MODULES, providerModule, type Provider } from '../../adapters/models/providers';
import { laneForProvider, type LaneRouting } from '../../adapters/aws/sqs-task-queue';
import { DEFAULT_LANES } from '../../infra/config';

describe('provider lane table', () => {
  it('has a line for every provider module, and each module names the lane of its line', () => {
    // Prepare
    const providers = Object.keys(PROVIDER_MODULES) as Provider[];

    // Assess
    expect(Object.keys(PROVIDER_LANES).sort()).toEqual([...providers].sort());
    for (const p of providers) expect({ p, lane: providerModule(p).lane }).toEqual({ p, lane: (PROVIDER_LANES[p] as { lane?: string }).lane });
  });

  it("is what the stack deploys by default, and the router sends each provider to its module's lane there", () => {
    // Prepare
    const routing: LaneRouting = {
      queueUrls: Object.fromEntries(DEFAULT_LANES.map((l) => [l.name, `https://sqs/${l.name}`])),
      defaultLane: DEFAULT_LANES[0].name,
    };

    // Act
    const routed = Object.fromEntries((Object.keys(PROVIDER_MODULES) as Provider[]).map((p) => [p, laneForProvider(p, routing)]));

    // Assess
    expect(DEFAULT_LANES.map((l) => l.name)).toEqual(defaultLanes().map((l) => l.name));
    expect(DEFAULT_LANES.map((l) => l.name)).toEqual(['openai', 'anthropic', 'gemini', 'bedrock']);
    for (const p of Object.keys(PROVIDER_MODULES) as Provider[])
      expect({ p, lane: routed[p] }).toEqual({ p, lane: providerModule(p).lane ?? routing.defaultLane });
  });
});
