/**
 * The batch lane against a provider's limits on one batch, with a batch client held in
 * memory: the size cap splits the tasks into several batches; fewer requests than the
 * provider's smallest batch (Bedrock: 100) are not submitted and stay open, without the
 * run being called out of budget.
 */
import { join } from 'node:path';
import type { BatchClient, BatchItemResult, BatchLimits, BatchRequest } from '../../core/batch';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { planTasks } from '../../core/run/plan';
import { generateBatches } from '../../core/run/generate-batch';
import type { CostModel } from '../../core/run/generate';
import { PSET_MINI, REPO } from '../helpers/cli';
import { openLocalRun } from '../helpers/model-fixtures';

class MemoryBatchClient implements BatchClient {
  readonly id = 'm';
  readonly batches: BatchRequest[][] = [];
  constructor(readonly limits: BatchLimits) {}
  async submit(requests: BatchRequest[]): Promise<string> {
    this.batches.push(requests);
    return `b${this.batches.length}`;
  }
  async poll() {
    return { state: 'ended' as const, providerState: 'completed' };
  }
  async results(batchId: string): Promise<BatchItemResult[]> {
    return this.batches[Number(batchId.slice(1)) - 1].map((r) => ({
      customId: r.customId,
      outcome: 'succeeded' as const,
      response: { text: 'x', finishReason: 'stop' as const, usage: { inputTokens: 10, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0 } },
    }));
  }
  async cancel() {}
}

async function run(limits: BatchLimits) {
  const pset = loadPset(PSET_MINI);
  const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
  const spec = {
    psetDigest: pset.digest,
    psetRoot: '',
    models: [{ id: 'm', params: {} }],
    samples: 1,
    withPaper: true,
    papers: null,
    promptTemplateDigest: template.digest,
    timeoutSec: 60,
    budgetUsd: 100,
  };
  const tasks = planTasks(pset, spec);
  const { store, ledger, close } = await openLocalRun(spec, { prefix: 'rcb-batch-limits-' });
  const client = new MemoryBatchClient(limits);
  const cost: CostModel = { worstCase: () => 0.01, billed: () => 0.001 };
  const notes: string[] = [];
  const progress = { start() {}, advance() {}, end() {}, note: (m: string) => void notes.push(m) };
  try {
    const result = await generateBatches(
      { store, ledger, batchClients: new Map([['m', client]]), batchCosts: new Map([['m', cost]]), progress, sleep: async () => undefined },
      { runId: 'r', pset, template, withPaper: true, tasks, pollMs: 0 },
    );
    return { result, client, tasks, notes, run: (await store.getRun('r'))! };
  } finally {
    await close();
  }
}

describe('batch limits', () => {
  test('the prompt-size cap of one batch splits the tasks into several', async () => {
    const { result, client, tasks, run: r } = await run({ maxRequests: 1000, maxPromptChars: 20_000 });

    expect(client.batches.length).toBeGreaterThan(1);
    for (const b of client.batches) expect(b.length === 1 || b.reduce((a, x) => a + x.prompt.text.length, 0) <= 20_000).toBe(true);
    expect(
      client.batches
        .flat()
        .map((r) => r.customId)
        .sort(),
    ).toEqual(tasks.map((t) => t.taskId).sort());
    expect(result).toMatchObject({ answered: tasks.length, open: 0 });
    expect(r.spentUsd).toBeCloseTo(tasks.length * 0.001, 9);
  });

  test('fewer open requests than the smallest batch stay open, and the run is not out of budget', async () => {
    const { result, client, tasks, notes, run: r } = await run({ maxRequests: 50_000, maxPromptChars: 1e9, minRequests: 100 });

    expect(tasks.length).toBeLessThan(100);
    expect(client.batches).toEqual([]);
    expect(result).toMatchObject({ submitted: 0, open: tasks.length, budgetExhausted: false });
    expect(notes.join('\n')).toContain(`fewer than the 100 a batch needs`);
    expect(r.reservedUsd).toBeCloseTo(0, 9);
  });
});
