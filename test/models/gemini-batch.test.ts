import { batchContract } from './support/batch-contract';
import { startFakeGemini } from '../../fakes/fake-batch-servers';
import { FAKE_KEYS, fakeEntry } from '../helpers/model-fixtures';

batchContract({
  name: 'Gemini batch mode',
  start: startFakeGemini,
  keys: FAKE_KEYS.gemini,
  findsByIntent: true,
  entry: (url) => fakeEntry('gemini', url),
});
