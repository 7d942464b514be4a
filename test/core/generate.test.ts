import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { planTasks } from '../../core/run/plan';
import { generate } from '../../core/run/generate';
import type { ModelClient, ModelRequest, ModelResponse } from '../../core/model';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { PSET_MINI, REPO } from '../helpers/cli';

/** A paid-looking model that records when each call starts and ends. */
class RecordingModel implements ModelClient {
  readonly id = 'rec';
  readonly params = {};
  readonly offline = false;
  readonly calls: { paper: string; start: number; end: number }[] = [];
  private clock = 0;

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const call = { paper: req.task.paper, start: this.clock++, end: -1 };
    this.calls.push(call);
    await new Promise((r) => setTimeout(r, 5));
    call.end = this.clock++;
    return { text: '```python\npass\n```', usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0 }, finishReason: 'stop' };
  }
}

describe('generate', () => {
  it("sends each paper's first call alone, so the rest of the paper's calls can read the cached prefix", async () => {
    // Prepare
    const pset = loadPset(PSET_MINI);
    const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
    const model = new RecordingModel();
    const store = new SqliteRunStore(':memory:');
    const tasks = planTasks(pset, { models: [{ id: 'rec', params: {} }], samples: 2, withPaper: true, promptTemplateDigest: template.digest });

    // Act
    await generate({ store, clients: new Map([['rec', model]]) }, { runId: 'r', pset, template, withPaper: true, tasks, concurrency: 8 });

    // Assess
    expect(model.calls).toHaveLength(tasks.length);
    for (const paper of pset.papers.map((p) => p.meta.id)) {
      const calls = model.calls.filter((c) => c.paper === paper).sort((a, b) => a.start - b.start);
      const [first, ...rest] = calls;
      for (const c of rest) expect(c.start).toBeGreaterThan(first.end);
    }
    // Calls of different papers still overlap: the wait is per paper, not global.
    const overlapping = model.calls.some((a) => model.calls.some((b) => a !== b && a.start < b.end && b.start < a.end));
    expect(overlapping).toBe(true);
    await store.close();
  });
});
