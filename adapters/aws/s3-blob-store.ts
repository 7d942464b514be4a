/**
 * BlobStore on one S3 bucket, optionally under a key prefix, plus JSON helpers over any
 * BlobStore.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ZodType, ZodTypeDef } from 'zod';
import type { BlobStore } from '../../core/store';
import { objectTags, taggingHeader } from '../../core/cloud/object-tags';

export interface S3BlobStoreOptions {
  bucket: string;
  /**
   * Prefix of every key this store writes, reads and lists (e.g. `runs/<runId>/`); the keys
   * it takes and returns are relative to it.
   * @default ''
   */
  prefix?: string;
  /**
   * Keys per ListObjectsV2 page.
   * @default 1000 (S3's maximum)
   */
  listPageSize?: number;
}

export class S3BlobStore implements BlobStore {
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly listPageSize: number;

  constructor(
    private readonly s3: S3Client,
    options: S3BlobStoreOptions,
  ) {
    this.bucket = options.bucket;
    this.prefix = options.prefix ?? '';
    this.listPageSize = options.listPageSize ?? 1000;
  }

  /**
   * Writes the object in one PutObject (this store never uploads in parts). An object of a run
   * (`runs/<runId>/...`) is tagged `rcb:run=<runId>` in the same request (core/cloud/object-tags.ts),
   * which needs s3:PutObjectTagging besides s3:PutObject (infra/storage-grants.ts grants both).
   */
  async put(key: string, body: Buffer | string, contentType?: string): Promise<void> {
    const fullKey = this.prefix + key;
    const tagging = taggingHeader(objectTags(fullKey));
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: fullKey,
        Body: body,
        ContentType: contentType ?? (typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/octet-stream'),
        ...(tagging ? { Tagging: tagging } : {}),
      }),
    );
  }

  /**
   * A presigned GET URL of the key, valid `expiresInSec` seconds: anyone holding it reads the
   * object without AWS credentials of their own (a browser opens the cloud's report.html).
   */
  async presignGet(key: string, expiresInSec: number): Promise<string> {
    return getSignedUrl(this.s3, new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }), { expiresIn: expiresInSec });
  }

  /** The object's bytes, or null when there is no object under the key. */
  async get(key: string): Promise<Buffer | null> {
    try {
      const res = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
      if (!res.Body) return Buffer.alloc(0);
      return Buffer.from(await res.Body.transformToByteArray());
    } catch (err) {
      if (isMissingKey(err)) return null;
      throw err;
    }
  }

  /** Every key under `prefix` (all pages), relative to the store's prefix, in S3's (UTF-8 binary) order. */
  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const res = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, MaxKeys: this.listPageSize, ContinuationToken: token }),
      );
      for (const o of res.Contents ?? []) if (o.Key !== undefined) keys.push(o.Key.slice(this.prefix.length));
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }
}

function isMissingKey(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  // GetObject answers NoSuchKey; without s3:ListBucket permission S3 answers 403 instead,
  // which is an access problem and is left to surface.
  // A missing bucket is a deployment error, not a missing blob.
  return e?.name === 'NoSuchKey' || (e?.$metadata?.httpStatusCode === 404 && e?.name !== 'NoSuchBucket');
}

/** Writes `value` as JSON (application/json). */
export async function putJson(store: BlobStore, key: string, value: unknown): Promise<void> {
  await store.put(key, JSON.stringify(value), 'application/json');
}

/**
 * Reads JSON written by {@link putJson}: null when the key is missing; with a schema, the
 * value is validated and a mismatch throws an error naming the key.
 */
export async function getJson<T>(store: BlobStore, key: string, schema?: ZodType<T, ZodTypeDef, unknown>): Promise<T | null> {
  const body = await store.get(key);
  if (body === null) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new Error(`blob ${key} is not JSON: ${(err as Error).message}`);
  }
  if (!schema) return raw as T;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new Error(`blob ${key} does not match its schema: ${issues}`);
  }
  return parsed.data;
}
