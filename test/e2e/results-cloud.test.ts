/**
 * The HTML page from the cloud, against the emulator's real servers (dynalite, s3rver): the
 * Aggregate stage stores `report.html` beside the other reports; `rcb cloud results RUN
 * --format html --out FILE` fetches it; a presigned URL of it (what `--url` prints for a
 * deployed stack) opens with a plain HTTP GET and no credentials.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmulatorState } from '../../emulator/emulator-state';
import { startLocalAws } from '../../emulator/local-aws';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { S3BlobStore } from '../../adapters/aws/s3-blob-store';
import { aggregateRun, CLOUD_REPORTS } from '../../core/cloud/aggregate-run';
import { cloudKeys } from '../../core/cloud/payloads';
import { synthesizeSweep } from '../core/report-synthetic';
import { rcb, tempDir } from '../helpers/cli';

jest.setTimeout(180_000);

const root = tempDir('rcb-cloud-html-');
const stateDir = join(root, 'state');
const loaded = synthesizeSweep(3, 24);
const runId = loaded.run.runId;
const key = `${cloudKeys.reportPrefix(runId)}report.html`;
let stored = '';
let fetched = '';
let contentType = '';

beforeAll(async () => {
  // The state folder as `rcb cloud run --emulate` leaves it, holding one run that Aggregate scores.
  const state = EmulatorState.open(stateDir);
  const aws = await startLocalAws({ scratchDir: tmpdir(), keep: { dynamoDir: state.dynamoDir!, s3Dir: state.s3Dir! } });
  try {
    const { store, blobs } = createStorageAdapters(aws.storage, { doc: aws.doc, s3: aws.s3 });
    await store.createRun({ ...loaded.run, status: 'evaluating' });
    await store.putTasks(runId, loaded.tasks);
    for (const c of loaded.completions.values()) await store.putCompletion(c);
    for (const v of loaded.verdicts.values()) await store.putVerdict(runId, v);
    expect(await aggregateRun({ store, blobs }, runId)).toMatchObject({ status: 'succeeded' });
    stored = (await blobs.get(key))?.toString('utf8') ?? '';
    const url = await new S3BlobStore(aws.s3, { bucket: aws.storage.bucket }).presignGet(key, 300);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    contentType = res.headers.get('content-type') ?? '';
    fetched = await res.text();
  } finally {
    await aws.close();
    state.close();
  }
});

describe('report.html from the cloud', () => {
  it('is stored by Aggregate beside the other reports: the page of the run from the store alone', () => {
    expect(CLOUD_REPORTS.map((r) => r.file)).toContain('report.html');
    expect(stored).toMatch(/^<!DOCTYPE html>/);
    expect(stored).toContain('<table id="leaderboard" class="sortable">');
    expect(stored).toContain('no diff or prompt: the pset is not at hand here');
    expect(stored).toContain(`"runs":["${runId}"]`);
  });

  it('opens from a presigned URL with no credentials, as text/html', () => {
    expect(fetched).toBe(stored);
    expect(contentType).toMatch(/^text\/html/);
  });

  it('is fetched by rcb cloud results --format html --out FILE', () => {
    const file = join(root, 'cloud-report.html');
    const r = rcb(['cloud', 'results', runId, '--emulate', '--state-dir', stateDir, '--format', 'html', '--out', file]);
    expect([r.status, r.stderr]).toEqual([0, `wrote html report of run ${runId} to ${file} (${Buffer.byteLength(stored)} bytes)\n`]);
    expect(r.stdout).toBe('');
    expect(readFileSync(file, 'utf8')).toBe(stored);
  });

  it('refuses --url for the emulated cloud and with --out, naming the flags', () => {
    const emulated = rcb(['cloud', 'results', runId, '--emulate', '--state-dir', stateDir, '--format', 'html', '--url']);
    expect(emulated.status).toBe(1);
    expect(emulated.stderr).toContain('--url needs a deployed stack');
    const both = rcb(['cloud', 'results', runId, '--format', 'html', '--url', '--out', join(root, 'x.html')]);
    expect(both.status).toBe(1);
    expect(both.stderr).toContain('give one of them');
  });
});
