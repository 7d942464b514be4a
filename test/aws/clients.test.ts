/** The SDK client factories take everything from the config they are given. */
import { createDynamoDocumentClient, createS3Client, createSecretsManagerClient, createSqsClient } from '../../adapters/aws/clients';

const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' };

describe('AWS client factories', () => {
  it('use the configured region, endpoint and credentials over the environment', async () => {
    // Prepare
    const saved = { ...process.env };
    process.env.AWS_REGION = 'ap-southeast-2';
    process.env.AWS_ACCESS_KEY_ID = 'FROM_ENV';
    process.env.AWS_SECRET_ACCESS_KEY = 'from-env';
    try {
      const config = { region: 'eu-west-1', endpoint: 'http://127.0.0.1:4567', credentials, maxAttempts: 7 };
      // Act
      const clients = [createDynamoDocumentClient(config), createSqsClient(config), createSecretsManagerClient(config), createS3Client(config)];
      // Assess
      for (const client of clients) {
        expect(await client.config.region()).toBe('eu-west-1');
        expect(await client.config.credentials()).toMatchObject(credentials);
        expect(await client.config.maxAttempts()).toBe(7);
        const endpoint = await client.config.endpoint?.();
        expect(endpoint && `${endpoint.protocol}//${endpoint.hostname}:${endpoint.port}`).toBe('http://127.0.0.1:4567');
        client.destroy();
      }
    } finally {
      process.env = saved;
    }
  });

  it('S3 path-style addressing is off unless asked for', () => {
    expect(createS3Client({ region: 'us-east-1', credentials }).config.forcePathStyle).toBe(false);
    expect(createS3Client({ region: 'us-east-1', credentials, forcePathStyle: true }).config.forcePathStyle).toBe(true);
  });
});
