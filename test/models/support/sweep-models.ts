/**
 * The registry file of the 3-model batch sweep (two OpenAI models, one Anthropic model, each
 * with batch prices at half the list prices) against the fake batch servers, which the
 * local and the emulated-cloud batch sweep tests both run.
 */
const batchPrices = (input: number, output: number, source: string) => ({
  input: input / 2,
  cached_input: input / 20,
  output: output / 2,
  as_of: '2026-12-01',
  source,
});

export const SWEEP_MODEL_IDS = ['fake-gpt', 'fake-gpt-reasoning', 'fake-claude'] as const;

export function sweepModelsYaml(openaiUrl: string, anthropicUrl: string): string {
  const models = [
    {
      id: 'fake-gpt',
      provider: 'openai',
      model: 'gpt-fake',
      base_url: `${openaiUrl}/v1`,
      params: { max_output_tokens: 2000, temperature: 0 },
      prices: { input: 2, cached_input: 0.5, output: 8, as_of: '2026-12-01', batch: batchPrices(2, 8, 'https://developers.openai.com/api/docs/pricing') },
      knowledge_cutoff: '2024-06',
      context_window: 1000000,
    },
    {
      id: 'fake-gpt-reasoning',
      provider: 'openai-responses',
      model: 'gpt-fake-r',
      base_url: `${openaiUrl}/v1`,
      params: { max_output_tokens: 4000, reasoning_effort: 'low' },
      prices: { input: 1, cached_input: 0.1, output: 4, as_of: '2026-12-01', batch: batchPrices(1, 4, 'https://developers.openai.com/api/docs/pricing') },
      knowledge_cutoff: '2025-01',
      context_window: 400000,
    },
    {
      id: 'fake-claude',
      provider: 'anthropic',
      model: 'claude-fake',
      base_url: anthropicUrl,
      params: { max_output_tokens: 2000, temperature: 0 },
      prices: {
        input: 3,
        cached_input: 0.3,
        cache_write: 3.75,
        output: 15,
        as_of: '2026-12-01',
        batch: batchPrices(3, 15, 'https://platform.claude.com/docs/en/build-with-claude/batch-processing'),
      },
      knowledge_cutoff: '2025-08',
      context_window: 200000,
    },
  ];
  return `models:\n${models.map((m) => `  - ${JSON.stringify(m)}\n`).join('')}`;
}
