/**
 * Any endpoint that speaks Chat Completions by `base_url` (vLLM, OpenRouter, DeepSeek,
 * xAI, Together): the OpenAI chat client, with no default key (local servers often need
 * none) and OpenAI's tokenizer only for models named like OpenAI's.
 */
import { automaticCache, openaiTokenizer, type ProviderModule } from '../provider-module';
import { OpenAIChatClient } from './openai';

export const openaiCompatibleProvider: ProviderModule = {
  name: 'openai-compatible',
  keyEnv: undefined,
  // No lane of its own: the routing's default lane.
  lane: undefined,
  cacheMinTokens: 1024,
  tokenizer: (entry) => (/^(openai\/)?(gpt-|o\d|chatgpt-)/i.test(entry.model) ? openaiTokenizer(entry.model) : 'approx'),
  cacheMode: automaticCache,
  refusesTemperature: () => false,
  // The SDK insists on a key; servers without auth ignore it.
  createClient: (entry, key, opts) => new OpenAIChatClient(entry, key ?? 'unused', opts),
};
