/** The sha256 of a file's bytes (hex), read as a stream: wheels and model weights are GBs. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

export function fileSha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}
