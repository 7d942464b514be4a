/**
 * The cloud lane of each model provider (the registry's `provider` value) and the lanes a
 * stack deploys by default, in one SDK-free table: the provider modules (providers/*), the SQS
 * router (adapters/aws/sqs-task-queue.ts) and the stack's defaults (infra/config.ts) all read
 * it, so a lane is named once. Adding a provider: its module, its line in providers/index.ts
 * and its line here.
 */
export interface ProviderLane {
  /** The lane (one SQS queue and DLQ) its calls go through; absent: the routing's default lane. */
  readonly lane?: string;
  /** The lane's most generator invocations at once, for the provider that owns the lane. */
  readonly maxConcurrency?: number;
  /** A lane name earlier deployments gave it (`rcb:lanes`), still routed to when present. */
  readonly formerLane?: string;
}

export const PROVIDER_LANES = {
  openai: { lane: 'openai', maxConcurrency: 8 },
  'openai-responses': { lane: 'openai' },
  anthropic: { lane: 'anthropic', maxConcurrency: 4 },
  // The lane's name keeps the queues' logical ids of deployed stacks (GeminiLane...).
  gemini: { lane: 'gemini', maxConcurrency: 4, formerLane: 'google' },
  bedrock: { lane: 'bedrock', maxConcurrency: 4 },
  'openai-compatible': {},
} as const satisfies Record<string, ProviderLane>;

export type LaneProvider = keyof typeof PROVIDER_LANES;

/** The lane of a provider in the table, or undefined (the routing's default lane). */
export function laneOfProvider(provider: string): ProviderLane {
  return Object.hasOwn(PROVIDER_LANES, provider) ? (PROVIDER_LANES as Record<string, ProviderLane>)[provider] : {};
}

/** The lanes a stack deploys when `rcb:lanes` is absent: each lane the table names, at its owner's concurrency, in table order. */
export function defaultLanes(): { name: string; maxConcurrency: number }[] {
  const out: { name: string; maxConcurrency: number }[] = [];
  for (const entry of Object.values(PROVIDER_LANES) as ProviderLane[]) {
    if (entry.lane && entry.maxConcurrency !== undefined && !out.some((l) => l.name === entry.lane))
      out.push({ name: entry.lane, maxConcurrency: entry.maxConcurrency });
  }
  return out;
}
