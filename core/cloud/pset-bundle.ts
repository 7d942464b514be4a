/**
 * Pset bundles: the files a cloud run needs of a pset (papers.yaml and the folders of the
 * papers in scope) as one JSON document `{ format, files: { relpath: base64 } }` in the
 * blob store, content-addressed (`psets/<sha256>.json`). JSON rather than tar keeps it
 * dependency-free; base64 adds a third, which is fine for code-and-text psets (the bundled
 * example is ~170 KB). A pset with large binary files would want a tar stream instead.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { z } from 'zod';
import type { Pset } from '../types';
import type { BlobStore } from '../store';
import type { ModelInfo, RunSpec } from '../records';
import type { PromptTemplate } from '../prompt/template';
import { parseTemplate } from '../prompt/template';
import { readPset, formatProblem } from '../pset/read-pset';
import { canonicalJson } from '../ids';
import { cloudKeys } from './payloads';

export const PSET_BUNDLE_FORMAT = 'rcb-pset-bundle/1';

export const psetBundleSchema = z.object({
  format: z.literal(PSET_BUNDLE_FORMAT),
  /** Path relative to the pset root -> file bytes, base64. */
  files: z.record(z.string()),
});
export type PsetBundle = z.infer<typeof psetBundleSchema>;

function listFiles(dir: string, prefix: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    // Same exclusions as the paper digest (core/pset/read-pset.ts).
    if (entry.name === '__pycache__' || entry.name === '.git') continue;
    const rel = `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...listFiles(join(dir, entry.name), rel));
    else if (entry.isFile()) out.push(rel);
  }
  return out;
}

/** The bundle of a pset as read (its papers in scope) and its content digest. */
export function createPsetBundle(pset: Pset): { digest: string; key: string; body: string } {
  const rels = ['papers.yaml', ...pset.papers.flatMap((p) => listFiles(p.dir, p.meta.id))].sort();
  const files: Record<string, string> = {};
  for (const rel of rels) files[rel] = readFileSync(join(pset.root, rel)).toString('base64');
  const body = canonicalJson({ format: PSET_BUNDLE_FORMAT, files });
  const digest = createHash('sha256').update(body).digest('hex');
  return { digest, key: cloudKeys.psetBundle(digest), body };
}

/** Uploads a pset's bundle and returns its key; uploading the same content again is harmless. */
export async function uploadPsetBundle(blobs: BlobStore, pset: Pset): Promise<string> {
  const bundle = createPsetBundle(pset);
  await blobs.put(bundle.key, bundle.body, 'application/json');
  return bundle.key;
}

/** Uploads a prompt template (keyed by its digest) and returns its key. */
export async function uploadPromptTemplate(blobs: BlobStore, templateText: string): Promise<string> {
  const digest = createHash('sha256').update(templateText).digest('hex');
  const key = cloudKeys.promptTemplate(digest);
  await blobs.put(key, templateText, 'text/plain; charset=utf-8');
  return key;
}

/**
 * Uploads the replay file of each replayed model of the spec (a model whose only parameter
 * is `replay`, the file's digest; `info.config.replay` names the file read), so the
 * generator can answer from it. Returns the keys written.
 */
export async function uploadReplayFiles(blobs: BlobStore, spec: Pick<RunSpec, 'models'>, info: Record<string, ModelInfo>): Promise<string[]> {
  const files = new Map<string, string>();
  for (const m of spec.models) {
    const digest = m.params.replay;
    const path = info[m.id]?.config.replay;
    if (typeof digest === 'string' && typeof path === 'string') files.set(digest, path);
  }
  const keys: string[] = [];
  for (const [digest, path] of files) {
    const key = cloudKeys.replayFile(digest);
    await blobs.put(key, readFileSync(path), 'application/x-ndjson');
    keys.push(key);
  }
  return keys;
}

/** A relative path that stays inside its root, or an error. */
function safeRelative(rel: string): string {
  const norm = normalize(rel);
  if (isAbsolute(rel) || norm === '..' || norm.startsWith(`..${sep}`) || rel.includes('\0')) {
    throw new Error(`pset bundle holds a path outside the pset: ${JSON.stringify(rel)}`);
  }
  return norm;
}

/** Writes a bundle's files under `dir` (created if needed) and returns `dir`. */
export function materialisePsetBundle(body: Buffer | string, dir: string): string {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString());
  } catch {
    throw new Error('pset bundle is not JSON');
  }
  const bundle = psetBundleSchema.parse(raw);
  for (const [rel, b64] of Object.entries(bundle.files)) {
    const abs = join(dir, safeRelative(rel));
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, Buffer.from(b64, 'base64'));
  }
  return dir;
}

/** Thrown when a run's inputs are missing or do not match the run spec. */
export class RunInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunInputError';
  }
}

/**
 * Fetches a pset bundle into `scratchDir/<digest>` (once: a warm Lambda or a retried
 * container reuses it), reads the papers in scope and checks the digest the run was
 * planned with, so a run never mixes two versions of a pset.
 */
export async function loadBundledPset(
  blobs: BlobStore,
  key: string,
  scratchDir: string,
  expect: { psetDigest: string; papers: string[] | null },
): Promise<Pset> {
  const root = join(scratchDir, 'psets', key.replace(/[^A-Za-z0-9._-]+/g, '_'));
  if (!existsSync(join(root, 'papers.yaml'))) {
    const body = await blobs.get(key);
    if (!body) throw new RunInputError(`pset bundle ${key} is not in the blob store`);
    materialisePsetBundle(body, root);
  }
  const { pset, problems } = readPset(root, { papers: expect.papers, displayBase: root });
  if (problems.length) throw new RunInputError(`pset bundle ${key} has problems:\n${problems.map(formatProblem).join('\n')}`);
  if (pset.digest !== expect.psetDigest) {
    throw new RunInputError(`pset bundle ${key} has digest ${pset.digest}, but the run was planned for ${expect.psetDigest}`);
  }
  return pset;
}

/** Fetches a prompt template and checks its digest. */
export async function loadPromptTemplateBlob(blobs: BlobStore, key: string, digest: string): Promise<PromptTemplate> {
  const body = await blobs.get(key);
  if (!body) throw new RunInputError(`prompt template ${key} is not in the blob store`);
  const template = parseTemplate(body.toString('utf8'), key);
  if (template.digest !== digest) throw new RunInputError(`prompt template ${key} has digest ${template.digest}, not ${digest}`);
  return template;
}
