/**
 * Every provider rcb speaks to, by the registry's `provider` value. Adding one: its module
 * in this folder (see ../provider-module.ts), a line here, its entries in resources/models.yaml.
 */
import type { ProviderModule, ProviderTable } from '../provider-module';
import { anthropicProvider } from './anthropic';
import { bedrockProvider } from './bedrock';
import { geminiProvider } from './gemini';
import { openaiProvider } from './openai';
import { openaiCompatibleProvider } from './openai-compatible';
import { openaiResponsesProvider } from './openai-responses';

export const PROVIDER_MODULES = {
  openai: openaiProvider,
  'openai-responses': openaiResponsesProvider,
  anthropic: anthropicProvider,
  gemini: geminiProvider,
  bedrock: bedrockProvider,
  'openai-compatible': openaiCompatibleProvider,
} as const satisfies Record<string, ProviderModule>;

export type Provider = keyof typeof PROVIDER_MODULES;

export const PROVIDERS = Object.keys(PROVIDER_MODULES) as [Provider, ...Provider[]];

/** The module of a provider in `table` (@default PROVIDER_MODULES); an unknown name is an error naming the known ones. */
export function providerModule(provider: string, table: ProviderTable = PROVIDER_MODULES): ProviderModule {
  if (!Object.hasOwn(table, provider)) throw new Error(`unknown model provider "${provider}"; known: ${Object.keys(table).join(', ')}`);
  return table[provider];
}
