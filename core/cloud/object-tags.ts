/**
 * Cost-allocation tags of the artifacts bucket's objects, written once and read by the S3
 * adapter (which tags each object it writes) and by infra (the IAM grant that lets it, on
 * these tag keys only). Every object of a run, `runs/<runId>/...`, carries `rcb:run=<runId>`,
 * so S3 Storage Lens and Cost Explorer (once the tag is activated) split storage by run; a
 * cloud sweep is one run, so the same tag splits it by sweep.
 */
import { ARTIFACT_PREFIXES } from './storage-layout';

/** Tag keys objects may carry. */
export const OBJECT_TAGS = { run: 'rcb:run' } as const;

/** What S3 admits in a tag value: letters, digits, spaces and `+ - = . _ : / @`, up to 256 characters. */
const TAG_VALUE = /^[\p{L}\p{N}\p{Zs}+\-=._:/@]{1,256}$/u;

/** The tags of the object under `key`: its run's for a key under `runs/<runId>/`, none elsewhere (pset bundles are shared by runs). */
export function objectTags(key: string): Record<string, string> {
  const runs = ARTIFACT_PREFIXES.runs;
  if (!key.startsWith(runs)) return {};
  const end = key.indexOf('/', runs.length);
  const runId = end < 0 ? '' : key.slice(runs.length, end);
  // A run id is 16 hex digits (core/ids.ts); anything S3 would refuse is left untagged rather than failing the write.
  return TAG_VALUE.test(runId) ? { [OBJECT_TAGS.run]: runId } : {};
}

/** Tags as S3's `x-amz-tagging` header (and PutObject's `Tagging`): URL query parameters; undefined for none. */
export function taggingHeader(tags: Record<string, string>): string | undefined {
  const entries = Object.entries(tags);
  return entries.length ? new URLSearchParams(entries).toString() : undefined;
}
