/**
 * `rcb cloud results RUN [--emulate]`: scores of a run, in the report formats of `rcb report`;
 * `--format html --out FILE` fetches the page Aggregate stored, `--url` prints a presigned
 * URL of it instead (a browser opens it with no AWS credentials of its own).
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseReportFlags, UsageError } from '../common';
import { findStackOutputs, stackAdapters, type CloudDeps } from '../../../app/deployed-stack';
import type { StackFlags } from './stack-flags';
import { withEmulatedStack, type EmulateFlags } from './emulated-stack-flags';
import { readRunResults, storedReportKey } from '../../../core/cloud/run-results';
import { S3BlobStore } from '../../../adapters/aws/s3-blob-store';

export interface ResultsOptions extends StackFlags, EmulateFlags {
  format: string;
  judge?: string;
  subset: string;
  /** Write the report to this file instead of stdout. */
  out?: string;
  /** Print a presigned URL of the stored report instead of its text. */
  url?: boolean;
}

/** How long a presigned report URL stays valid. */
export const REPORT_URL_SECONDS = 3600;

export async function cloudResults(runId: string, opts: ResultsOptions, deps: CloudDeps): Promise<number> {
  // Flags are checked before any AWS call or server start.
  const flags = parseReportFlags(opts);
  if (opts.url && opts.out) throw new UsageError('--url prints a link to the stored report; --out writes the report to a file: give one of them');
  if (opts.url && opts.emulate) {
    throw new UsageError(
      "--url needs a deployed stack: the emulated bucket exists only while a command runs; use --out FILE to fetch the emulated run's report",
    );
  }
  const urlKey = opts.url ? storedReportKey(runId, flags) : null;
  if (opts.url && !urlKey) {
    throw new UsageError(
      `--url links a report Aggregate stored: --format html, json, csv, markdown, table or official with its default judge and --subset all`,
    );
  }
  const report = async (ports: Parameters<typeof readRunResults>[0], where: string): Promise<number> => {
    const results = await readRunResults(ports, runId, flags).catch((e: Error) => {
      throw new UsageError(e.message);
    });
    if (!results) throw new UsageError(`no run ${runId} in ${where}`);
    if (results.note) deps.err(`note: ${results.note}\n`);
    if (opts.out) {
      const file = resolve(opts.out);
      try {
        writeFileSync(file, results.text);
      } catch (e) {
        throw new UsageError(`--out ${opts.out}: ${(e as Error).message}`);
      }
      deps.err(`wrote ${flags.format} report of run ${runId} to ${file} (${Buffer.byteLength(results.text)} bytes)\n`);
    } else deps.out(results.text);
    return 0;
  };
  if (opts.emulate) return withEmulatedStack(opts, (stack, where) => report(stack, where));
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  if (urlKey) {
    const blobs = new S3BlobStore(deps.s3, { bucket: outputs.bucket });
    // Only a report that is there: a link to a missing object answers a browser with an XML error.
    if (!(await blobs.list(urlKey)).includes(urlKey)) {
      const run = await stackAdapters(deps, outputs).store.getRun(runId);
      throw new UsageError(
        run ? `run ${runId} is ${run.status}: Aggregate has not stored ${urlKey.split('/').pop()} yet` : `no run ${runId} in stack ${opts.stackName}`,
      );
    }
    deps.out(`${await blobs.presignGet(urlKey, REPORT_URL_SECONDS)}\n`);
    deps.err(`presigned URL of ${urlKey}, valid ${REPORT_URL_SECONDS / 60} minutes\n`);
    return 0;
  }
  return report(stackAdapters(deps, outputs), `stack ${opts.stackName}`);
}
