/**
 * What an ECS container learns of itself from the task metadata endpoint v4: the image it was
 * started from. ECS sets ECS_CONTAINER_METADATA_URI_V4 in every container (Fargate platform
 * 1.4 and later); `GET $ECS_CONTAINER_METADATA_URI_V4` answers the container's metadata,
 * whose `ImageID` is the digest of the image it runs (`sha256:...`). The emulator serves the
 * same document with the image asset's hash (emulator/container-metadata.ts).
 *
 * Read with node:http, not the global fetch: fetch loads Node's bundled undici on first use,
 * about a third of a second of a shard container's start on a busy host, for one local GET
 * (the AWS SDK's clients already load node:http).
 */
import { get as httpGet } from 'node:http';

/** One GET: the status and body, or a rejection (unreachable, timed out). */
export type MetadataGet = (uri: string, timeoutMs: number) => Promise<{ status: number; body: string }>;

/** GET over node:http (the endpoint is plain HTTP on a link-local address), bounded by `timeoutMs`. */
export const httpMetadataGet: MetadataGet = (uri, timeoutMs) =>
  new Promise((resolve, reject) => {
    const req = httpGet(uri, { timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });

/** The container's image digest, or null with the reason when it cannot be learnt (not on ECS, endpoint down). */
export async function containerImageDigest(
  env: NodeJS.ProcessEnv,
  get: MetadataGet = httpMetadataGet,
  timeoutMs = 3000,
): Promise<{ digest: string } | { digest: null; reason: string }> {
  const uri = env.ECS_CONTAINER_METADATA_URI_V4;
  if (!uri) return { digest: null, reason: 'ECS_CONTAINER_METADATA_URI_V4 is not set (not an ECS container)' };
  try {
    const res = await get(uri, timeoutMs);
    if (res.status < 200 || res.status > 299) return { digest: null, reason: `the task metadata endpoint answered HTTP ${res.status}` };
    const body = JSON.parse(res.body) as { ImageID?: unknown };
    if (typeof body.ImageID !== 'string' || !body.ImageID) return { digest: null, reason: 'the container metadata has no ImageID' };
    return { digest: body.ImageID };
  } catch (err) {
    return { digest: null, reason: `the task metadata endpoint could not be read: ${(err as Error).message}` };
  }
}
