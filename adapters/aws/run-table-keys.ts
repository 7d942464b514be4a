/**
 * Attribute and index names of the single run table, as core/cloud/storage-layout.ts defines
 * them (the one definition infra and the adapters share).
 */
export { TABLE_ATTRIBUTES as RUN_TABLE_KEYS } from '../../core/cloud/storage-layout';
