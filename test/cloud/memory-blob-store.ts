/** An in-memory BlobStore for the cloud use-case tests. */
import type { BlobStore } from '../../core/store';

export class MemoryBlobStore implements BlobStore {
  readonly objects = new Map<string, Buffer>();
  async put(key: string, body: Buffer | string): Promise<void> {
    this.objects.set(key, Buffer.from(body));
  }
  async get(key: string): Promise<Buffer | null> {
    return this.objects.get(key) ?? null;
  }
  async list(prefix: string): Promise<string[]> {
    return [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
  }
}
