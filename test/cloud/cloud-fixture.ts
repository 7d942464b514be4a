/**
 * A cloud run of the bundled example, in memory: SQLite store, in-memory blobs, a queue that
 * collects messages, offline models. What `rcb cloud run` uploads and starts, built here.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelClient } from '../../core/model';
import type { RunSpec } from '../../core/records';
import type { Pset } from '../../core/types';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { resourcePath, packageRoot } from '../../core/util/package-root';
import { runId as computeRunId } from '../../core/ids';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { EmptyModel, OracleModel } from '../../adapters/models/offline';
import type { QueuedGeneration, TaskQueue } from '../../core/cloud/ports';
import type { RunWorkflowInput } from '../../core/cloud/payloads';
import { uploadPromptTemplate, uploadPsetBundle } from '../../core/cloud/pset-bundle';
import { MemoryBlobStore } from './memory-blob-store';

export class ListQueue implements TaskQueue {
  readonly sent: QueuedGeneration[] = [];
  async send(messages: QueuedGeneration[]): Promise<void> {
    this.sent.push(...messages);
  }
}

/** Counts the calls of a client, to show duplicate deliveries call nothing. */
export function counting(client: ModelClient): ModelClient & { calls: number } {
  const wrapped = {
    id: client.id,
    params: client.params,
    offline: client.offline,
    calls: 0,
    complete: (req: Parameters<ModelClient['complete']>[0]) => {
      wrapped.calls++;
      return client.complete(req);
    },
  };
  return wrapped;
}

export const EXAMPLE = join(packageRoot(), 'examples', 'pset-mini');

export interface CloudFixture {
  pset: Pset;
  store: SqliteRunStore;
  blobs: MemoryBlobStore;
  queue: ListQueue;
  scratchDir: string;
  input: RunWorkflowInput;
  spec: RunSpec;
  clients: Map<string, ModelClient & { calls: number }>;
}

export async function cloudFixture(options: { budgetUsd?: number | null; papers?: string[] } = {}): Promise<CloudFixture> {
  const pset = loadPset(EXAMPLE, { papers: options.papers ?? null });
  const templatePath = resourcePath('prompt-template.txt');
  const template = loadTemplate(templatePath);
  const blobs = new MemoryBlobStore();
  const psetKey = await uploadPsetBundle(blobs, pset);
  await uploadPromptTemplate(blobs, readFileSync(templatePath, 'utf8'));
  const oracle = counting(new OracleModel(pset));
  const empty = counting(new EmptyModel());
  const spec: RunSpec = {
    psetDigest: pset.digest,
    psetRoot: psetKey,
    models: [oracle, empty].map((c) => ({ id: c.id, params: c.params })),
    samples: 1,
    withPaper: true,
    papers: options.papers ?? null,
    promptTemplateDigest: template.digest,
    timeoutSec: 60,
    budgetUsd: options.budgetUsd ?? null,
  };
  const input: RunWorkflowInput = {
    runId: computeRunId(spec),
    spec,
    models: { oracle: { config: { name: 'oracle', offline: true } }, empty: { config: { name: 'empty', offline: true } } },
  };
  return {
    pset,
    store: new SqliteRunStore(':memory:'),
    blobs,
    queue: new ListQueue(),
    scratchDir: mkdtempSync(join(tmpdir(), 'rcb-cloud-test-')),
    input,
    spec,
    clients: new Map([
      ['oracle', oracle],
      ['empty', empty],
    ]),
  };
}
