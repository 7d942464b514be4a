/** What check-progress publishes for the budget alarms (core/cost/infra-budget-signals.ts). */
import { budgetSignals } from '../../core/cost/infra-budget-signals';

const run = (budgetUsd: number | null, spentUsd: number, reservedUsd = 0) => ({ spec: { budgetUsd } as never, spentUsd, reservedUsd });

describe('budgetSignals', () => {
  it('publishes nothing for a run without a budget', () => {
    expect(budgetSignals(run(null, 5), { total: 100, settled: 50 })).toBeNull();
  });

  it('counts reserved spend as spent, and projects only once a tenth of the tasks is settled', () => {
    expect(budgetSignals(run(10, 2, 1), { total: 1000, settled: 50 })).toEqual({ spentPercent: 30, projectedPercent: null });
    // 2 USD for 100 of 1000 tasks: on course for 20 USD, twice the budget.
    expect(budgetSignals(run(10, 2), { total: 1000, settled: 100 })).toEqual({ spentPercent: 20, projectedPercent: 200 });
  });

  it('needs at least 10 settled tasks on a small run before projecting', () => {
    expect(budgetSignals(run(1, 0.5), { total: 20, settled: 9 })!.projectedPercent).toBeNull();
    expect(budgetSignals(run(1, 0.5), { total: 20, settled: 10 })!.projectedPercent).toBe(100);
  });
});
