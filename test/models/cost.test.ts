import { costOf, estimateGroupCost, sumEstimates, worstCaseCost, type BilledUsage, type ModelPrices } from '../../core/cost';
import { countTokens, promptTokensUpperBound, tokenizerFor } from '../../adapters/models/tokens';

const sonnet: ModelPrices = { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15, as_of: '2026-11-29' };
const gpt54: ModelPrices = {
  input: 2.5,
  cached_input: 0.25,
  output: 15,
  long_context: { threshold_tokens: 272000, input: 5, cached_input: 0.5, output: 22.5 },
  as_of: '2026-11-29',
};

function usage(input: number, cached: number, output: number, extra: Partial<BilledUsage> = {}): BilledUsage {
  return { inputTokens: input, cachedInputTokens: cached, outputTokens: output, reasoningTokens: 0, ...extra };
}

describe('cost of a call', () => {
  test('cached input, cache writes, fresh input and output are each billed at their price', () => {
    const u = usage(1_000_000, 400_000, 500_000, { cacheWriteInputTokens: 100_000 });

    // 500k fresh x 3 + 400k cached x 0.3 + 100k written x 3.75 + 500k out x 15, per 1M
    expect(costOf(u, sonnet)).toBeCloseTo(1.5 + 0.12 + 0.375 + 7.5, 10);
  });

  test('reasoning tokens are part of the output count and are not billed twice', () => {
    expect(costOf(usage(0, 0, 1000, { reasoningTokens: 800 }), gpt54)).toBeCloseTo((1000 * 15) / 1e6, 12);
  });

  test('a prompt above the long-context threshold bills the whole request at the long tier', () => {
    expect(costOf(usage(272_000, 0, 1000), gpt54)).toBeCloseTo((272_000 * 2.5 + 1000 * 15) / 1e6, 12);
    expect(costOf(usage(300_000, 0, 1000), gpt54)).toBeCloseTo((300_000 * 5 + 1000 * 22.5) / 1e6, 12);
  });

  test('cache writes default to the input price when the provider has no write price', () => {
    expect(costOf(usage(1000, 0, 0, { cacheWriteInputTokens: 1000 }), gpt54)).toBeCloseTo((1000 * 2.5) / 1e6, 12);
  });
});

describe('worst-case cost of a call', () => {
  test('is every prompt token at the dearer of input and cache write, plus the full output limit', () => {
    expect(worstCaseCost(10_000, 2_000, sonnet)).toBeCloseTo((10_000 * 3.75 + 2_000 * 15) / 1e6, 12);
  });

  test('uses the long-context tier when the prompt is in it', () => {
    expect(worstCaseCost(300_000, 1000, gpt54)).toBeCloseTo((300_000 * 5 + 1000 * 22.5) / 1e6, 12);
  });

  test('bounds the billed cost of any call within its prompt and output limits', () => {
    let seed = 42;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 500; i++) {
      const prompt = Math.floor(rand() * 400_000);
      const max = Math.floor(rand() * 32_000);
      const input = Math.floor(rand() * prompt);
      const cached = Math.floor(rand() * input);
      const written = Math.floor(rand() * (input - cached));
      const u = usage(input, cached, Math.floor(rand() * max), { cacheWriteInputTokens: written });
      for (const prices of [sonnet, gpt54]) expect(costOf(u, prices)).toBeLessThanOrEqual(worstCaseCost(prompt, max, prices) + 1e-12);
    }
  });
});

describe('estimate of a paper scheduled together', () => {
  const group = { prefixTokens: 20_000, suffixTokens: [500, 500, 500, 500, 500] };

  test('explicit caching writes the prefix once and reads it on every later call', () => {
    const e = estimateGroupCost(group, sonnet, { mode: 'explicit', outputTokensPerCall: 1000 });

    const first = 20_000 * 3.75 + 500 * 3 + 1000 * 15;
    const later = 20_000 * 0.3 + 500 * 3 + 1000 * 15;
    expect(e.usd).toBeCloseTo((first + 4 * later) / 1e6, 12);
    expect(e.usdWithoutCaching).toBeCloseTo((5 * (20_500 * 3 + 1000 * 15)) / 1e6, 12);
    expect(e.savingUsd).toBeCloseTo(e.usdWithoutCaching - e.usd, 12);
    expect(e).toMatchObject({ calls: 5, inputTokens: 5 * 20_500, cachedInputTokens: 4 * 20_000, outputTokens: 5000 });
  });

  test('automatic caching has no write premium', () => {
    const e = estimateGroupCost(group, gpt54, { mode: 'automatic', outputTokensPerCall: 0 });

    expect(e.usd).toBeCloseTo((20_500 * 2.5 + 4 * (20_000 * 0.25 + 500 * 2.5)) / 1e6, 12);
  });

  test('a prefix shorter than the provider caches saves nothing', () => {
    const e = estimateGroupCost({ prefixTokens: 900, suffixTokens: [100, 100] }, sonnet, { mode: 'explicit', outputTokensPerCall: 10 });

    expect(e.savingUsd).toBe(0);
    expect(e.cachedInputTokens).toBe(0);
  });

  test('estimates add up', () => {
    const a = estimateGroupCost(group, sonnet, { mode: 'explicit', outputTokensPerCall: 1000 });
    const total = sumEstimates([a, a]);

    expect(total.usd).toBeCloseTo(2 * a.usd, 12);
    expect(total.calls).toBe(10);
  });
});

describe('token counts', () => {
  const openai = { provider: 'openai-responses' as const, model: 'gpt-5.4' };
  const claude = { provider: 'anthropic' as const, model: 'claude-sonnet-4-6' };
  const sample = String.raw`\section{Method} We minimise $\mathcal{L} = \sum_i \|f(x_i) - y_i\|^2$.
def compute_loss(pred, target):
    return ((pred - target) ** 2).sum(dim=-1).mean()
`.repeat(20);

  test('OpenAI families are counted exactly with o200k_base', () => {
    expect(countTokens('hello world', openai)).toEqual({ tokens: 2, method: 'tiktoken:o200k_base', exact: true });
  });

  test('older GPT-4 models behind a compatible endpoint use cl100k_base', () => {
    expect(tokenizerFor({ provider: 'openai-compatible', model: 'openai/gpt-4-turbo' })).toBe('cl100k_base');
    expect(tokenizerFor({ provider: 'openai-compatible', model: 'gpt-4o-mini' })).toBe('o200k_base');
    expect(tokenizerFor({ provider: 'openai-compatible', model: 'deepseek-chat' })).toBe('approx');
  });

  test('other families are approximated at 3 characters per token, and say so', () => {
    expect(countTokens('x'.repeat(30), claude)).toEqual({ tokens: 10, method: 'approx:chars/3', exact: false });
  });

  test('text that looks like a special token is counted as text', () => {
    expect(countTokens('<|endoftext|>', openai).tokens).toBeGreaterThan(1);
  });

  test('the upper bound used for reservations is above a real tokenizer count of paper text and code', () => {
    const real = countTokens(sample, openai).tokens;

    expect(promptTokensUpperBound(sample, claude)).toBeGreaterThan(real * 1.3);
    expect(promptTokensUpperBound(sample, openai)).toBeGreaterThan(real);
  });
});
