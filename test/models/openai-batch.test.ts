import { batchContract } from './support/batch-contract';
import { startFakeOpenAI } from '../../fakes/fake-batch-servers';

const entry = (provider: 'openai' | 'openai-responses') => (url: string) => ({
  id: `fake-${provider}`,
  provider,
  model: 'gpt-fake',
  base_url: `${url}/v1`,
  params: provider === 'openai' ? { max_output_tokens: 2000, temperature: 0 } : { max_output_tokens: 2000, reasoning_effort: 'low' },
  prices: {
    input: 2,
    cached_input: 0.5,
    output: 8,
    as_of: '2026-12-01',
    batch: { input: 1, cached_input: 0.25, output: 4, as_of: '2026-12-01', source: 'https://developers.openai.com/api/docs/pricing' },
  },
  knowledge_cutoff: '2024-06',
  context_window: 1000000,
});

batchContract({
  name: 'OpenAI Batch API (Chat Completions)',
  start: startFakeOpenAI,
  entry: entry('openai'),
  keys: { OPENAI_API_KEY: 'test-key' },
  findsByIntent: true,
});
batchContract({
  name: 'OpenAI Batch API (Responses)',
  start: startFakeOpenAI,
  entry: entry('openai-responses'),
  keys: { OPENAI_API_KEY: 'test-key' },
  findsByIntent: true,
});
