/** SecretsManagerKeySource with a mocked Secrets Manager client. */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { createSecretsManagerClient } from '../../adapters/aws/clients';
import { SecretFormatError, SecretsManagerKeySource } from '../../adapters/aws/secrets-key-source';

const smMock = mockClient(SecretsManagerClient);
const client = createSecretsManagerClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
const SECRET_ID = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:rcb-keys';

beforeEach(() => {
  smMock.reset();
});

afterAll(() => {
  smMock.restore();
});

describe('SecretsManagerKeySource', () => {
  it('returns keys by variable name, and undefined for absent or blank ones', async () => {
    smMock.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ OPENAI_API_KEY: ' sk-openai\n', GEMINI_API_KEY: '  ' }) });
    const keys = new SecretsManagerKeySource(client, { secretId: SECRET_ID });

    expect(await keys.get('OPENAI_API_KEY')).toBe('sk-openai');
    expect(await keys.get('GEMINI_API_KEY')).toBeUndefined();
    expect(await keys.get('ANTHROPIC_API_KEY')).toBeUndefined();
    expect(smMock.commandCalls(GetSecretValueCommand)[0].args[0].input).toEqual({ SecretId: SECRET_ID });
  });

  it('reads the secret once per TTL, and again after it', async () => {
    smMock.on(GetSecretValueCommand).resolvesOnce({ SecretString: '{"OPENAI_API_KEY":"old"}' }).resolvesOnce({ SecretString: '{"OPENAI_API_KEY":"rotated"}' });
    let now = 1_000_000;
    const keys = new SecretsManagerKeySource(client, { secretId: SECRET_ID, ttlMs: 60_000, now: () => now });

    const first = await Promise.all([keys.get('OPENAI_API_KEY'), keys.get('OPENAI_API_KEY'), keys.get('OPENAI_API_KEY')]);
    now += 59_999;
    const cached = await keys.get('OPENAI_API_KEY');
    now += 1;
    const reread = await keys.get('OPENAI_API_KEY');

    expect(first).toEqual(['old', 'old', 'old']);
    expect(cached).toBe('old');
    expect(reread).toBe('rotated');
    expect(smMock.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it('does not keep a failed read: the next call tries again', async () => {
    smMock
      .on(GetSecretValueCommand)
      .rejectsOnce(Object.assign(new Error('not authorized'), { name: 'AccessDeniedException' }))
      .resolvesOnce({ SecretString: '{"OPENAI_API_KEY":"sk"}' });
    const keys = new SecretsManagerKeySource(client, { secretId: SECRET_ID });

    await expect(keys.get('OPENAI_API_KEY')).rejects.toThrow('not authorized');
    expect(await keys.get('OPENAI_API_KEY')).toBe('sk');
  });

  it('a secret that is not JSON is a clear error naming the secret and not quoting it', async () => {
    smMock.on(GetSecretValueCommand).resolves({ SecretString: 'sk-live-abcdef' });
    const keys = new SecretsManagerKeySource(client, { secretId: SECRET_ID });

    const error = (await keys.get('OPENAI_API_KEY').then(
      () => new Error('resolved'),
      (e: unknown) => e,
    )) as Error;

    expect(error).toBeInstanceOf(SecretFormatError);
    expect(error.message).toBe(`secret ${SECRET_ID} must hold a JSON object of KEY_NAME -> string (e.g. {"OPENAI_API_KEY": "..."}): its value is not JSON`);
    expect(error.message).not.toContain('abcdef');
  });

  it('refuses JSON that is not an object of strings, naming the entry', async () => {
    smMock
      .on(GetSecretValueCommand)
      .resolvesOnce({ SecretString: '["sk"]' })
      .resolvesOnce({ SecretString: '{"OPENAI_API_KEY":{"key":"sk-secret"}}' })
      .resolvesOnce({ SecretBinary: new Uint8Array([1, 2]) });
    const keys = new SecretsManagerKeySource(client, { secretId: SECRET_ID, ttlMs: 0 });

    await expect(keys.get('OPENAI_API_KEY')).rejects.toThrow(/its value is JSON array, not an object/);
    await expect(keys.get('OPENAI_API_KEY')).rejects.toThrow(/entry OPENAI_API_KEY is object, not a string/);
    await expect(keys.get('OPENAI_API_KEY')).rejects.toThrow(/no string value/);
  });
});
