/**
 * Attribute and index names of the single run table: the one definition that the CDK
 * StorageConstruct, the DynamoDB adapter and the local stand-ins share. No SDK import, so
 * the CDK app can read it cheaply.
 */
export const RUN_TABLE_KEYS = {
  partitionKey: 'pk',
  sortKey: 'sk',
  gsi1Name: 'gsi1',
  gsi1PartitionKey: 'gsi1pk',
  gsi1SortKey: 'gsi1sk',
  ttlAttribute: 'expiresAt',
} as const;
