import { batchContract } from './support/batch-contract';
import { startFakeAnthropic } from '../../fakes/fake-batch-servers';
import { FAKE_KEYS, fakeEntry } from '../helpers/model-fixtures';

batchContract({
  name: 'Anthropic Message Batches',
  start: startFakeAnthropic,
  keys: FAKE_KEYS.anthropic,
  entry: (url) => fakeEntry('anthropic', url),
});

import { AnthropicBatchClient } from '../../adapters/models/providers/anthropic-batch';
import { parseModelEntry } from '../../adapters/models/registry';
import { request } from './support/provider-contract';

test('Anthropic batch requests carry the Messages body without the cache marker, named by task id', async () => {
  const server = await startFakeAnthropic(() => 'ok');
  try {
    const entry = parseModelEntry({
      id: 'c',
      provider: 'anthropic',
      model: 'claude-fake',
      base_url: server.url,
      params: { max_output_tokens: 500, temperature: 0 },
      prices: {
        input: 3,
        cached_input: 0.3,
        output: 15,
        as_of: '2026-12-01',
        batch: { input: 1.5, cached_input: 0.15, output: 7.5, as_of: '2026-12-01', source: 'x' },
      },
      knowledge_cutoff: '2025-08',
      context_window: 200000,
    });
    const client = new AnthropicBatchClient(entry, 'test-key');

    await client.submit([{ customId: 'task_1', prompt: request().prompt }]);

    const [req] = server.backend.batches[0].requests;
    expect(req.customId).toBe('task_1');
    expect(req.body).toMatchObject({ model: 'claude-fake', max_tokens: 500, temperature: 0 });
    expect(JSON.stringify(req.body)).not.toContain('cache_control');
  } finally {
    await server.close();
  }
});
