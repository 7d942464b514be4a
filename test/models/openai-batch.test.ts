import { batchContract } from './support/batch-contract';
import { startFakeOpenAI } from '../../fakes/fake-batch-servers';
import { FAKE_KEYS, fakeEntry } from '../helpers/model-fixtures';

const entry = (provider: 'openai' | 'openai-responses') => (url: string) => fakeEntry(provider, url, { id: `fake-${provider}`, model: 'gpt-fake' });

batchContract({
  name: 'OpenAI Batch API (Chat Completions)',
  start: startFakeOpenAI,
  entry: entry('openai'),
  keys: FAKE_KEYS.openai,
  findsByIntent: true,
});
batchContract({
  name: 'OpenAI Batch API (Responses)',
  start: startFakeOpenAI,
  entry: entry('openai-responses'),
  keys: FAKE_KEYS.openai,
  findsByIntent: true,
});
