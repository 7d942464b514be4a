/**
 * Creating the run table with the layout of infra's StorageConstruct, for the local
 * stand-ins (the emulator and the integration tests); deployed tables come from the stack.
 */
import { CreateTableCommand, waitUntilTableExists, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { RUN_TABLE_KEYS } from './run-table-keys';

export async function createRunTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const k = RUN_TABLE_KEYS;
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [k.partitionKey, k.sortKey, k.gsi1PartitionKey, k.gsi1SortKey].map((a) => ({ AttributeName: a, AttributeType: 'S' })),
      KeySchema: [
        { AttributeName: k.partitionKey, KeyType: 'HASH' },
        { AttributeName: k.sortKey, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: k.gsi1Name,
          KeySchema: [
            { AttributeName: k.gsi1PartitionKey, KeyType: 'HASH' },
            { AttributeName: k.gsi1SortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
    }),
  );
  // A table answers item requests once ACTIVE; dynalite gets there on a timer, which a
  // loaded machine delays past the first write (ResourceNotFoundException).
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 0.05, maxDelay: 0.5 }, { TableName: tableName });
}
