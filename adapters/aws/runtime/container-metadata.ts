/**
 * What an ECS container learns of itself from the task metadata endpoint v4: the image it was
 * started from. ECS sets ECS_CONTAINER_METADATA_URI_V4 in every container (Fargate platform
 * 1.4 and later); `GET $ECS_CONTAINER_METADATA_URI_V4` answers the container's metadata,
 * whose `ImageID` is the digest of the image it runs (`sha256:...`). The emulator serves the
 * same document with the image asset's hash (emulator/container-metadata.ts).
 */

/** The container's image digest, or null with the reason when it cannot be learnt (not on ECS, endpoint down). */
export async function containerImageDigest(
  env: NodeJS.ProcessEnv,
  fetchImpl: typeof fetch = fetch,
  timeoutMs = 3000,
): Promise<{ digest: string } | { digest: null; reason: string }> {
  const uri = env.ECS_CONTAINER_METADATA_URI_V4;
  if (!uri) return { digest: null, reason: 'ECS_CONTAINER_METADATA_URI_V4 is not set (not an ECS container)' };
  try {
    const res = await fetchImpl(uri, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return { digest: null, reason: `the task metadata endpoint answered HTTP ${res.status}` };
    const body = (await res.json()) as { ImageID?: unknown };
    if (typeof body.ImageID !== 'string' || !body.ImageID) return { digest: null, reason: 'the container metadata has no ImageID' };
    return { digest: body.ImageID };
  } catch (err) {
    return { digest: null, reason: `the task metadata endpoint could not be read: ${(err as Error).message}` };
  }
}
