import { batchContract } from './support/batch-contract';
import { startFakeGemini } from '../../fakes/fake-batch-servers';

batchContract({
  name: 'Gemini batch mode',
  start: startFakeGemini,
  keys: { GEMINI_API_KEY: 'test-key' },
  findsByIntent: true,
  entry: (url) => ({
    id: 'fake-gemini',
    provider: 'gemini',
    model: 'gemini-fake',
    base_url: url,
    params: { max_output_tokens: 2000, temperature: 0 },
    prices: {
      input: 0.3,
      cached_input: 0.03,
      output: 2.5,
      as_of: '2026-12-01',
      batch: { input: 0.15, cached_input: 0.015, output: 1.25, as_of: '2026-12-01', source: 'https://ai.google.dev/gemini-api/docs/batch-api' },
    },
    knowledge_cutoff: '2025-01',
    context_window: 1048576,
  }),
});
