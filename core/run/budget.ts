/**
 * Budgets of a run: the run's total and, optionally, one per model (a sweep's per-model
 * budgets). A per-model budget is a budget account in the run store, a record of its own
 * (`<run id>/budget/<model>`) that only holds a budget, a spend and reservations, so that
 * the store's one atomic reserve-and-check serves both caps. A call reserves on its
 * model's account first, then on the run; when the second does not fit the first is
 * released, so neither cap is ever exceeded.
 */
import type { RunStore } from '../store';
import type { RunRecord, RunSpec } from '../records';

/** Which cap refused a reservation: the model's own budget, or the run's total. */
export type BudgetScope = 'model' | 'run';

/** The run-store id of a model's budget account. */
export function budgetAccountId(runId: string, model: string): string {
  return `${runId}/budget/${model}`;
}

/** Where a model's calls are reserved and settled: its account (if it has a budget), then the run. */
export class RunBudget {
  constructor(
    private readonly store: RunStore,
    private readonly runId: string,
    /** Models that have a budget of their own. */
    private readonly cappedModels: ReadonlySet<string> = new Set(),
  ) {}

  private accounts(model: string): string[] {
    return this.cappedModels.has(model) ? [budgetAccountId(this.runId, model), this.runId] : [this.runId];
  }

  /**
   * Reserve `usd` for a call of `model` under every cap that applies. Resolves with null
   * when it holds, else with the cap that did not fit (`model` or `run`), nothing held.
   */
  async reserve(model: string, usd: number): Promise<BudgetScope | null> {
    const held: string[] = [];
    for (const account of this.accounts(model)) {
      if (!(await this.store.reserveBudget(account, usd))) {
        for (const a of held) await this.store.settleBudget(a, usd, 0);
        return account === this.runId ? 'run' : 'model';
      }
      held.push(account);
    }
    return null;
  }

  /** Release `reservedUsd` and record `actualUsd` as spent, on every account of the model. */
  async settle(model: string, reservedUsd: number, actualUsd: number): Promise<void> {
    for (const account of this.accounts(model)) await this.store.settleBudget(account, reservedUsd, actualUsd);
  }
}

/**
 * Create (or find) the budget account of each model with a budget, and set its cap to the
 * given one (a resumed sweep may change it). Returns the models that have one.
 */
export async function openBudgetAccounts(
  store: RunStore,
  runId: string,
  spec: RunSpec,
  modelBudgets: Record<string, number>,
  now: () => Date = () => new Date(),
): Promise<Set<string>> {
  const stamp = now().toISOString();
  for (const [model, budgetUsd] of Object.entries(modelBudgets)) {
    const id = budgetAccountId(runId, model);
    const account: RunRecord = {
      runId: id,
      spec: { ...spec, models: spec.models.filter((m) => m.id === model), budgetUsd },
      source: 'rcb',
      papers: [],
      models: {},
      status: 'planned',
      createdAt: stamp,
      updatedAt: stamp,
      spentUsd: 0,
      reservedUsd: 0,
    };
    const existing = await store.createRun(account);
    if (existing.spec.budgetUsd !== budgetUsd) await store.setRunBudget(id, budgetUsd);
  }
  return new Set(Object.keys(modelBudgets));
}
