/**
 * The cloud lane of each model provider and the lanes a stack deploys by default, derived
 * from the provider modules (providers/*: `lane`, `laneMaxConcurrency`, `formerLane`): the
 * SQS router (adapters/aws/sqs-task-queue.ts) and the stack's defaults (infra/config.ts) read
 * this table, so a lane is named once, in its provider's module. Every function takes the
 * provider table (default: PROVIDER_MODULES), so a test can route a provider of its own.
 */
import type { ProviderTable } from './provider-module';
import { PROVIDER_MODULES } from './providers';

export type { ProviderTable };

export interface ProviderLane {
  /** The lane (one SQS queue and DLQ) its calls go through; absent: the routing's default lane. */
  readonly lane?: string;
  /** The lane's most generator invocations at once, for the provider that owns the lane. */
  readonly maxConcurrency?: number;
  /** A lane name earlier deployments gave it (`rcb:lanes`), still routed to when present. */
  readonly formerLane?: string;
}

/** Each provider's lane, from its module. */
export function laneTable(modules: ProviderTable = PROVIDER_MODULES): Record<string, ProviderLane> {
  return Object.fromEntries(
    Object.entries(modules).map(([provider, m]) => [
      provider,
      {
        ...(m.lane !== undefined ? { lane: m.lane } : {}),
        ...(m.laneMaxConcurrency !== undefined ? { maxConcurrency: m.laneMaxConcurrency } : {}),
        ...(m.formerLane !== undefined ? { formerLane: m.formerLane } : {}),
      },
    ]),
  );
}

/** The shipped providers' lanes. */
export const PROVIDER_LANES: Readonly<Record<string, ProviderLane>> = laneTable();

export type LaneProvider = keyof typeof PROVIDER_MODULES;

/** The lane of a provider in the table, or {} (the routing's default lane). */
export function laneOfProvider(provider: string, modules: ProviderTable = PROVIDER_MODULES): ProviderLane {
  const table = modules === PROVIDER_MODULES ? PROVIDER_LANES : laneTable(modules);
  return Object.hasOwn(table, provider) ? table[provider] : {};
}

/** Provider -> lane name, for the providers that have one (the router's `providerLanes`). */
export function providerLaneNames(modules: ProviderTable = PROVIDER_MODULES): Record<string, string> {
  return Object.fromEntries(Object.entries(laneTable(modules)).flatMap(([provider, l]) => (l.lane ? [[provider, l.lane]] : [])));
}

/** The lanes a stack deploys when `rcb:lanes` is absent: each lane the table names, at its owner's concurrency, in table order. */
export function defaultLanes(modules: ProviderTable = PROVIDER_MODULES): { name: string; maxConcurrency: number }[] {
  const out: { name: string; maxConcurrency: number }[] = [];
  for (const entry of Object.values(laneTable(modules))) {
    if (entry.lane && entry.maxConcurrency !== undefined && !out.some((l) => l.name === entry.lane))
      out.push({ name: entry.lane, maxConcurrency: entry.maxConcurrency });
  }
  return out;
}
