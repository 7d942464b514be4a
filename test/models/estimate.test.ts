import { estimateModel, defaultOutputTokens } from '../../adapters/models/estimate';
import { findModel, loadRegistry } from '../../adapters/models/registry';
import { countTokens, promptTokensUpperBound } from '../../adapters/models/tokens';
import { worstCaseCost } from '../../core/cost';

const registry = loadRegistry();
const paper = 'We propose a tempered attention. '.repeat(400); // ~13K characters: long enough to cache
const groups = [{ prefix: `Instructions.\n${paper}`, suffixes: ['Fill in `a`.', 'Fill in `b`.', 'Fill in `c`.'] }];

describe('estimate for one model', () => {
  test('counts OpenAI prompts with tiktoken and prices automatic caching', () => {
    const entry = findModel(registry, 'gpt-5.4');

    const e = estimateModel(entry, groups, { outputTokensPerCall: 500 });

    const prefix = countTokens(groups[0].prefix, entry).tokens;
    expect(e).toMatchObject({ modelId: 'gpt-5.4', tokenCount: 'tiktoken:o200k_base', cacheMode: 'automatic', calls: 3, cachedInputTokens: 2 * prefix });
    expect(e.savingUsd).toBeGreaterThan(0);
    expect(e.usd).toBeLessThan(e.usdWithoutCaching);
  });

  test('says when the count is an approximation, and prices Anthropic cache writes', () => {
    const e = estimateModel(findModel(registry, 'claude-haiku-4.5'), groups, { outputTokensPerCall: 500 });

    expect(e.tokenCount).toBe('approx:chars/3');
    expect(e.cacheMode).toBe('explicit');
    expect(e.savingUsd).toBeGreaterThan(0);
  });

  test('the worst case is above the expected cost: every call at its output limit', () => {
    const e = estimateModel(findModel(registry, 'gemini-3-flash'), groups);

    expect(e.worstCaseUsd).toBeGreaterThan(e.usdWithoutCaching);
    expect(e.outputTokensPerCall).toBe(defaultOutputTokens(findModel(registry, 'gemini-3-flash')));
  });

  test('every call counts in the worst case, samples that repeat a suffix included', () => {
    const entry = findModel(registry, 'gpt-5.4');
    const [g] = groups;
    const worst = (suffix: string): number => worstCaseCost(promptTokensUpperBound(g.prefix + suffix, entry), entry.params.max_output_tokens, entry.prices);

    const e = estimateModel(entry, [{ prefix: g.prefix, suffixes: [g.suffixes[0], g.suffixes[0], g.suffixes[1]] }], { outputTokensPerCall: 500 });

    expect(e.worstCaseUsd).toBeCloseTo(2 * worst(g.suffixes[0]) + worst(g.suffixes[1]), 12);
    expect(e).toMatchObject({
      calls: 3,
      inputTokens: 3 * countTokens(g.prefix, entry).tokens + 2 * countTokens(g.suffixes[0], entry).tokens + countTokens(g.suffixes[1], entry).tokens,
    });
  });

  test('assumes longer answers from reasoning models', () => {
    expect(defaultOutputTokens(findModel(registry, 'gpt-5.4'))).toBeGreaterThan(defaultOutputTokens(findModel(registry, 'gpt-4.1')));
  });
});

describe('batch estimates', () => {
  test('a model with batch prices gets the same calls priced at them, without cache hits', () => {
    const entry = findModel(registry, 'claude-sonnet-4.6');

    const e = estimateModel(entry, groups, { outputTokensPerCall: 500 });

    expect(entry.prices.batch).toMatchObject({ input: 1.5, output: 7.5, as_of: '2026-12-01' });
    expect(e.batch!.usd).toBeCloseTo(e.usdWithoutCaching / 2, 12);
    expect(e.batch!.worstCaseUsd).toBeCloseTo(e.worstCaseUsd / 2, 12);
    expect(e.batch!.pricesAsOf).toBe('2026-12-01');
  });

  test('a model without batch prices has no batch estimate', () => {
    expect(estimateModel(findModel(registry, 'deepseek-chat'), groups).batch).toBeUndefined();
  });
});
