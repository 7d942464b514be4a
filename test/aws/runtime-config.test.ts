/** Config loading and model resolution shared by the cloud functions and the container. */
import { ConfigError, jsonRecordEnv, loadStorageConfig, once, positiveNumberEnv } from '../../adapters/aws/runtime/cloud-config';
import { resolveRunModels, runModelCosts } from '../../app/models';
import { HostedModels } from '../../adapters/models/hosted-models';
import { loadRegistry } from '../../adapters/models/registry';
import { staticKeySource } from '../../core/keys';
import { loadPset } from '../../core/pset/read-pset';
import { EXAMPLE } from '../cloud/cloud-fixture';

describe('loadStorageConfig', () => {
  it('names the missing variable', () => {
    expect(() => loadStorageConfig({ RCB_TABLE: 't' })).toThrow(new ConfigError('RCB_BUCKET', 'is not set'));
  });

  it('reads local endpoints for the emulator and defaults the region', () => {
    const c = loadStorageConfig({ RCB_TABLE: 't', RCB_BUCKET: 'b', RCB_S3_ENDPOINT: 'http://127.0.0.1:1', RCB_SCRATCH: '/s' });
    expect(c).toEqual({ region: 'us-east-1', table: 't', bucket: 'b', dynamoEndpoint: undefined, s3Endpoint: 'http://127.0.0.1:1', scratchDir: '/s' });
  });

  it('refuses malformed JSON and numbers, naming the variable', () => {
    expect(() => jsonRecordEnv({ Q: '{"a":1}' }, 'Q')).toThrow(/Q must be a JSON object of strings/);
    expect(() => jsonRecordEnv({ Q: 'nope' }, 'Q')).toThrow(/Q is not JSON/);
    expect(() => positiveNumberEnv({ N: '-1' }, 'N')).toThrow(/N must be a positive number/);
  });

  it('once() reads its config on first use only', () => {
    let reads = 0;
    const get = once(() => ++reads);
    expect(reads).toBe(0);
    get();
    get();
    expect(reads).toBe(1);
  });
});

describe('resolveRunModels', () => {
  const pset = loadPset(EXAMPLE);
  const hosted = () => new HostedModels(loadRegistry({}), staticKeySource({}));

  it('builds offline models without the registry and prices hosted ones', () => {
    const someId = hosted().ids()[0];
    const params = hosted().resolve(someId)!.client.params;
    const models = resolveRunModels(
      {
        models: [
          { id: 'oracle', params: {} },
          { id: someId, params },
        ],
      },
      pset,
      hosted,
    );
    expect([...models.clients.keys()]).toEqual(['oracle', someId]);
    expect([...models.costs.keys()]).toEqual([someId]);
  });

  it('refuses a hosted model whose parameters differ from the run spec', () => {
    const someId = hosted().ids()[0];
    expect(() => resolveRunModels({ models: [{ id: someId, params: { temperature: 9 } }] }, pset, hosted)).toThrow(/differ from the run's/);
  });
});

describe('runModelCosts', () => {
  const hosted = () => new HostedModels(loadRegistry({}), staticKeySource({}));

  it('prices the hosted models only, and reads no registry for a run of offline models', () => {
    const someId = hosted().ids()[0];
    const params = hosted().resolve(someId)!.client.params;
    const offlineOnly = runModelCosts(
      {
        models: [
          { id: 'oracle', params: {} },
          { id: 'empty', params: {} },
        ],
      },
      () => {
        throw new Error('registry read');
      },
    );
    expect(offlineOnly.size).toBe(0);
    expect([
      ...runModelCosts(
        {
          models: [
            { id: 'oracle', params: {} },
            { id: someId, params },
          ],
        },
        hosted,
      ).keys(),
    ]).toEqual([someId]);
    expect(() => runModelCosts({ models: [{ id: 'no-such-model', params: {} }] }, hosted)).toThrow(/not in the model registry/);
  });
});
