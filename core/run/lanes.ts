/**
 * Which lane each model's calls take: interactive (a call waits on its answer), the
 * provider's batch API (the models a user sends there), or the provider's background mode
 * (slow models not sent to a batch API: no call waits on one long request). One rule for a
 * local run and the cloud's PlanRun.
 */
export interface AsyncLanes {
  /** Models whose tasks go through their provider's batch API. */
  batch: string[];
  /** Slow models asked in their provider's background mode. */
  background: string[];
}

export function asyncLanes(models: readonly string[], batchApi: ReadonlySet<string>, isSlow: (model: string) => boolean): AsyncLanes {
  return {
    batch: models.filter((id) => batchApi.has(id)),
    background: models.filter((id) => !batchApi.has(id) && isSlow(id)),
  };
}
