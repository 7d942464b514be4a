/**
 * KeySource on one Secrets Manager secret holding a JSON object of ENV_NAME -> API key
 * (`{ "OPENAI_API_KEY": "...", "ANTHROPIC_API_KEY": "..." }`), the secret the
 * GenerationConstruct creates. The secret is read once and kept for a TTL, so a warm
 * function does not call Secrets Manager per task but still sees a rotated key within the
 * TTL. Errors name the secret and the offending entry, never a value.
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import type { KeySource } from '../../core/keys';

export interface SecretsKeySourceOptions {
  /** ARN or name of the secret. */
  secretId: string;
  /**
   * How long a read secret is used before it is read again, ms.
   * @default 300_000 (5 minutes)
   */
  ttlMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/** The secret exists but does not hold a JSON object of strings. */
export class SecretFormatError extends Error {
  constructor(secretId: string, problem: string) {
    super(`secret ${secretId} must hold a JSON object of KEY_NAME -> string (e.g. {"OPENAI_API_KEY": "..."}): ${problem}`);
    this.name = 'SecretFormatError';
  }
}

export class SecretsManagerKeySource implements KeySource {
  private readonly secretId: string;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private cached?: { keys: Promise<Record<string, string>>; fetchedAt: number };

  constructor(
    private readonly client: SecretsManagerClient,
    options: SecretsKeySourceOptions,
  ) {
    this.secretId = options.secretId;
    this.ttlMs = options.ttlMs ?? 300_000;
    this.now = options.now ?? Date.now;
  }

  /** The key stored under `envName`; undefined when the secret has no such entry or it is blank. */
  async get(envName: string): Promise<string | undefined> {
    const value = (await this.keys())[envName];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  private keys(): Promise<Record<string, string>> {
    const now = this.now();
    if (this.cached && now - this.cached.fetchedAt < this.ttlMs) return this.cached.keys;
    // Concurrent callers share one read; a failed read is not kept, so the next call retries.
    const keys = this.fetch();
    const entry = { keys, fetchedAt: now };
    this.cached = entry;
    keys.catch(() => {
      if (this.cached === entry) this.cached = undefined;
    });
    return keys;
  }

  private async fetch(): Promise<Record<string, string>> {
    const res = await this.client.send(new GetSecretValueCommand({ SecretId: this.secretId }));
    if (res.SecretString === undefined) throw new SecretFormatError(this.secretId, 'it has no string value (a binary secret?)');
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.SecretString);
    } catch {
      // The parser's message can quote part of the value, so it is not passed on.
      throw new SecretFormatError(this.secretId, 'its value is not JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new SecretFormatError(
        this.secretId,
        `its value is JSON ${Array.isArray(parsed) ? 'array' : parsed === null ? 'null' : typeof parsed}, not an object`,
      );
    }
    const keys: Record<string, string> = {};
    for (const [name, value] of Object.entries(parsed)) {
      if (typeof value !== 'string') throw new SecretFormatError(this.secretId, `entry ${name} is ${value === null ? 'null' : typeof value}, not a string`);
      keys[name] = value;
    }
    return keys;
  }
}
