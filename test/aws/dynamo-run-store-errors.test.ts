/**
 * Error paths of DynamoRunStore that local servers cannot produce: throttling and
 * unprocessed keys, with aws-sdk-client-mock.
 */
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { createDynamoDocumentClient } from '../../adapters/aws/clients';
import { DynamoRunStore, UnprocessedKeysError, runTableKey } from '../../adapters/aws/dynamo-run-store';
import { makeCompletion, makeVerdict } from './records';

const docMock = mockClient(DynamoDBDocumentClient);
const TABLE = 'runs';

function throttled(): ProvisionedThroughputExceededException {
  return new ProvisionedThroughputExceededException({ message: 'Rate of requests exceeds the allowed throughput', $metadata: {} });
}

function newStore(): DynamoRunStore {
  const doc = createDynamoDocumentClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  return new DynamoRunStore(doc, { tableName: TABLE, sleep: async () => {} });
}

beforeEach(() => {
  docMock.reset();
});

afterAll(() => {
  docMock.restore();
});

describe('DynamoRunStore under throttling', () => {
  it('putCompletion surfaces a throttling error instead of reporting a duplicate', async () => {
    docMock.on(PutCommand).rejects(throttled());

    await expect(newStore().putCompletion(makeCompletion('t1'))).rejects.toThrow(ProvisionedThroughputExceededException);
  });

  it('putVerdict surfaces a throttling error', async () => {
    // A verdict is a conditional update of its own attributes (the shard role may not put a whole item).
    docMock.on(UpdateCommand).rejects(throttled());

    await expect(newStore().putVerdict('run-1', makeVerdict('t1'))).rejects.toThrow(/exceeds the allowed throughput/);
  });

  it('reserveBudget surfaces a throttling error instead of reporting an exhausted budget', async () => {
    docMock.on(UpdateCommand).rejects(throttled());

    await expect(newStore().reserveBudget('run-1', 1)).rejects.toThrow(ProvisionedThroughputExceededException);
  });

  it('getRun surfaces a throttling error', async () => {
    docMock.on(GetCommand).rejects(throttled());

    await expect(newStore().getRun('run-1')).rejects.toThrow(ProvisionedThroughputExceededException);
  });
});

describe('DynamoRunStore batch reads', () => {
  it('getCompletions retries the keys left unprocessed', async () => {
    const [a, b] = [makeCompletion('a'), makeCompletion('b')];
    const item = (c: typeof a) => ({ ...runTableKey.completion(c.taskId), record: JSON.stringify(c) });
    docMock
      .on(BatchGetCommand)
      .resolvesOnce({ Responses: { [TABLE]: [item(a)] }, UnprocessedKeys: { [TABLE]: { Keys: [runTableKey.completion('b')] } } })
      .resolvesOnce({ Responses: { [TABLE]: [item(b)] } });

    const found = await newStore().getCompletions(['a', 'b']);

    expect([...found.values()]).toEqual([a, b]);
    const calls = docMock.commandCalls(BatchGetCommand);
    expect(calls).toHaveLength(2);
    expect(calls[1].args[0].input.RequestItems?.[TABLE].Keys).toEqual([runTableKey.completion('b')]);
  });

  it('getCompletions gives up with an error when keys stay unprocessed', async () => {
    docMock.on(BatchGetCommand).callsFake((input) => ({ Responses: { [TABLE]: [] }, UnprocessedKeys: input.RequestItems }));

    await expect(newStore().getCompletions(['a', 'b', 'c'])).rejects.toThrow(UnprocessedKeysError);
    expect(docMock.commandCalls(BatchGetCommand)).toHaveLength(8);
  });

  it('getCompletions asks for at most 100 keys per request', async () => {
    docMock.on(BatchGetCommand).resolves({ Responses: { [TABLE]: [] } });

    await newStore().getCompletions(Array.from({ length: 250 }, (_, i) => `t${i}`));

    expect(docMock.commandCalls(BatchGetCommand).map((c) => c.args[0].input.RequestItems?.[TABLE].Keys?.length)).toEqual([100, 100, 50]);
  });
});
