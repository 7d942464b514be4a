/**
 * The ECS task metadata endpoint v4, emulated: what `GET $ECS_CONTAINER_METADATA_URI_V4`
 * answers an ECS container (the parts rcb reads: adapters/aws/runtime/container-metadata.ts),
 * with the image asset's hash as the image's digest, since the emulator's image is the layout
 * built from that asset (container-app.ts).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ContainerMetadataServer {
  /** The value of ECS_CONTAINER_METADATA_URI_V4 in the emulated containers. */
  uri: string;
  close(): Promise<void>;
}

export async function startContainerMetadata(metadata: { imageId: string; image: string; containerName: string }): Promise<ContainerMetadataServer> {
  const body = JSON.stringify({
    DockerId: 'emulated',
    Name: metadata.containerName,
    DockerName: metadata.containerName,
    Image: metadata.image,
    ImageID: metadata.imageId,
  });
  const server = createServer((req, res) => {
    if (req.method !== 'GET') {
      res.writeHead(405).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    uri: `http://127.0.0.1:${port}/v4/emulated`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
