import { PROVIDER_MODULES, PROVIDERS, providerModule } from '../../adapters/models/providers';
import { DEFAULT_PROVIDER_LANES } from '../../adapters/aws/sqs-task-queue';
import { findModel, loadRegistry } from '../../adapters/models/registry';
import { keyEnvFor } from '../../adapters/models/create-model-client';
import { tokenizerFor } from '../../adapters/models/tokens';

describe('provider modules', () => {
  test('the registry accepts exactly the providers that have a module, each under its own name', () => {
    expect([...PROVIDERS].sort()).toEqual(Object.keys(PROVIDER_MODULES).sort());
    for (const p of PROVIDERS) expect(providerModule(p).name).toBe(p);
  });

  test("the cloud's default lanes agree with the modules' lanes", () => {
    for (const [provider, lane] of Object.entries(DEFAULT_PROVIDER_LANES)) {
      expect(providerModule(provider as keyof typeof PROVIDER_MODULES).lane).toBe(lane);
    }
  });

  test("an entry's own settings win over its provider's defaults", () => {
    const registry = loadRegistry();
    const deepseek = findModel(registry, 'deepseek-chat');
    expect(keyEnvFor(deepseek)).toBe('DEEPSEEK_API_KEY');
    expect(keyEnvFor({ ...deepseek, api_key_env: undefined })).toBeUndefined();
    expect(tokenizerFor({ provider: 'anthropic', model: 'claude', tokenizer: 'o200k_base' })).toBe('o200k_base');
    expect(tokenizerFor({ provider: 'anthropic', model: 'claude' })).toBe('approx');
  });

  test('every provider with a batch window has a batch client, and only those', () => {
    for (const p of PROVIDERS) expect(!!providerModule(p).createBatchClient).toBe(providerModule(p).batchWindowHours !== undefined);
    expect(PROVIDERS.filter((p) => providerModule(p).createBatchClient).sort()).toEqual(['anthropic', 'bedrock', 'gemini', 'openai', 'openai-responses']);
  });
});
