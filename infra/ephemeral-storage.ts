/**
 * The shard task's ephemeral storage, from the image's size. Fargate pulls the image onto
 * the task's ephemeral storage and keeps both the compressed layers and the unpacked
 * filesystem there; the scratch volume (the tests' workspaces) gets what is left
 * (docs/cloud.md "Shard storage").
 */

/** The evaluation image's size, MB (10^6 bytes), as measured (npm run image:check) or declared. */
export interface ImageSize {
  /** The unpacked filesystem (`podman image inspect --format {{.Size}}`). */
  readonly unpackedMB: number;
  /** The compressed layers as pushed (gzip by cdk deploy, zstd by push-image: the larger, gzip, by default). */
  readonly compressedMB: number;
}

/**
 * The image as docs/paper-environment.md measured it ("whole image, now": 6,295 MB
 * unpacked, 2,980 MB as gzip layers).
 */
export const MEASURED_IMAGE_SIZE: ImageSize = { unpackedMB: 6295, compressedMB: 2980 };

/** Room for the tests of one shard (paper workspaces, caches, fetched weights), GiB. */
export const DEFAULT_SHARD_SCRATCH_GIB = 16;

/** Fargate's range for a task's ephemeral storage, GiB (20 is the default given when none is set). */
export const FARGATE_EPHEMERAL_GIB = { min: 21, max: 200 } as const;

/** GiB of ephemeral storage a task of this image needs: compressed + unpacked + scratch, rounded up, in Fargate's range. */
export function shardEphemeralStorageGiB(image: ImageSize = MEASURED_IMAGE_SIZE, scratchGiB = DEFAULT_SHARD_SCRATCH_GIB): number {
  const imageGiB = ((image.unpackedMB + image.compressedMB) * 1e6) / 2 ** 30;
  const need = Math.ceil(imageGiB + scratchGiB);
  if (need > FARGATE_EPHEMERAL_GIB.max) {
    throw new Error(
      `the shard task would need ${need} GiB of ephemeral storage (image ${image.compressedMB} + ${image.unpackedMB} MB, scratch ${scratchGiB} GiB): Fargate allows at most ${FARGATE_EPHEMERAL_GIB.max}`,
    );
  }
  return Math.max(FARGATE_EPHEMERAL_GIB.min, need);
}

/**
 * Whether a measured image fits the task's ephemeral storage with `scratchGiB` left for the
 * tests: null when it does, else what to set (npm run image:check prints it). The compressed
 * size is taken at the measured image's ratio.
 */
export function imageFitsTask(measuredUnpackedMB: number, taskGiB: number, scratchGiB = DEFAULT_SHARD_SCRATCH_GIB): string | null {
  const ratio = MEASURED_IMAGE_SIZE.compressedMB / MEASURED_IMAGE_SIZE.unpackedMB;
  const compressedMB = Math.round(measuredUnpackedMB * ratio);
  const need = shardEphemeralStorageGiB({ unpackedMB: measuredUnpackedMB, compressedMB }, scratchGiB);
  if (need <= taskGiB) return null;
  return `the image (${Math.round(measuredUnpackedMB)} MB unpacked, about ${compressedMB} MB compressed) and ${scratchGiB} GiB of scratch need ${need} GiB of ephemeral storage; the shard task has ${taskGiB}: set rcb:imageUnpackedMB=${Math.ceil(measuredUnpackedMB)} and rcb:imageCompressedMB=${compressedMB}`;
}
