/**
 * Configuration of the cloud functions and the container, read and checked once (on a
 * handler's first invocation, never at module load) from the environment the stack sets.
 * Errors name the variable. Tests and the emulator build the same objects directly.
 */
import { tmpdir } from 'node:os';
import type { ZodType } from 'zod';

/** A missing or malformed environment variable. */
export class ConfigError extends Error {
  constructor(name: string, problem: string) {
    super(`rcb config: ${name} ${problem}`);
    this.name = 'ConfigError';
  }
}

export function requiredEnv(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name]?.trim();
  if (!value) throw new ConfigError(name, 'is not set');
  return value;
}

export function jsonRecordEnv(env: NodeJS.ProcessEnv, name: string): Record<string, string> {
  const raw = requiredEnv(env, name);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ConfigError(name, `is not JSON: ${raw.slice(0, 100)}`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw new ConfigError(name, 'must be a JSON object of strings');
  }
  return value as Record<string, string>;
}

/** A variable's JSON value checked against `schema`; errors name the variable and each wrong field. */
export function parseJsonConfig<T>(name: string, raw: string, schema: ZodType<T>): T {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ConfigError(name, `is not JSON: ${raw.slice(0, 100)}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new ConfigError(name, `is malformed: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

export function positiveNumberEnv(env: NodeJS.ProcessEnv, name: string): number {
  const raw = requiredEnv(env, name);
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(name, `must be a positive number (got "${raw}")`);
  return n;
}

/** Where the run store and the artifacts are, and how to reach them. */
export interface StorageConfig {
  region: string;
  /** RCB_TABLE: the DynamoDB run table. */
  table: string;
  /** RCB_BUCKET: the artifacts bucket. */
  bucket: string;
  /** RCB_DYNAMODB_ENDPOINT: a local DynamoDB (the emulator's dynalite); AWS when unset. */
  dynamoEndpoint?: string;
  /** RCB_S3_ENDPOINT: a local S3 (the emulator's s3rver); path-style addressing. */
  s3Endpoint?: string;
  /** Writable directory for pset bundles: RCB_SCRATCH, else the system temp dir (/tmp on Lambda). */
  scratchDir: string;
}

export function loadStorageConfig(env: NodeJS.ProcessEnv = process.env): StorageConfig {
  return {
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    table: requiredEnv(env, 'RCB_TABLE'),
    bucket: requiredEnv(env, 'RCB_BUCKET'),
    dynamoEndpoint: env.RCB_DYNAMODB_ENDPOINT || undefined,
    s3Endpoint: env.RCB_S3_ENDPOINT || undefined,
    scratchDir: env.RCB_SCRATCH || tmpdir(),
  };
}

/** Where a stage sends the run-ended event (core/cloud/run-events.ts). */
export interface EventsConfig {
  region: string;
  /** RCB_EVENT_BUS: the EventBridge bus, `default` in the stack. */
  busName: string;
  /** RCB_EVENTS_ENDPOINT: a local EventBridge (the emulator's); AWS when unset. */
  endpoint?: string;
}

/** The events configuration, or none when RCB_EVENT_BUS is unset (a stack deployed before events sends none). */
export function loadEventsConfig(env: NodeJS.ProcessEnv = process.env): EventsConfig | undefined {
  const busName = env.RCB_EVENT_BUS?.trim();
  if (!busName) return undefined;
  return { region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1', busName, endpoint: env.RCB_EVENTS_ENDPOINT || undefined };
}

/** Memoises a loader: config is read on first use, once. */
export function once<T>(load: () => T): () => T {
  let value: { v: T } | undefined;
  return () => (value ??= { v: load() }).v;
}
