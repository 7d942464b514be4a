/**
 * Pset overlays: an explicit, documented patch of a pset (a seed, a tolerance), never an
 * edit in place. An overlay is a folder:
 *
 *   overlay.yaml        - file: <paper>/<path in its folder>
 *                         reason: why (required, one line)
 *   <paper>/<path>      the whole replacement of that pset file, for each entry
 *
 * `applyOverlay` writes the patched pset as a new folder: a copy of the original, each listed
 * file replaced, and the patched papers' entries in papers.yaml given an `rcb_overlay` key
 * (SPEC 2 keeps unknown keys) naming the overlay's digest, the files, their reasons and the
 * original files' sha256. So the patch is in the pset's digest (runs with and without an
 * overlay have different run ids and never mix), in each run's record of its papers, and in
 * every report that shows them; the original pset is left as it was.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { parseDocument } from 'yaml';

export interface OverlayEntry {
  file: string;
  reason: string;
}

/** A problem of an overlay, with the file (and line, when known) it is in. */
export class OverlayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OverlayError';
  }
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const abs = join(d, e.name);
      if (e.isDirectory()) walk(abs);
      else out.push(relative(dir, abs).split(sep).join('/'));
    }
  };
  walk(dir);
  return out.sort();
}

/** The overlay's entries, checked against its folder and the pset. */
export function readOverlay(overlayDir: string, psetDir: string): { entries: OverlayEntry[]; digest: string } {
  const manifest = join(overlayDir, 'overlay.yaml');
  if (!existsSync(manifest)) throw new OverlayError(`${manifest}: missing (the overlay's list of files and reasons)`);
  const doc = parseDocument(readFileSync(manifest, 'utf8'));
  if (doc.errors.length) throw new OverlayError(`${manifest}:${doc.errors[0].linePos?.[0].line ?? 0}: ${doc.errors[0].message}`);
  const raw = doc.toJS() as unknown;
  if (!Array.isArray(raw) || !raw.length) throw new OverlayError(`${manifest}: must be a non-empty list of {file, reason}`);
  const entries: OverlayEntry[] = raw.map((e, i) => {
    const where = `${manifest}: entry ${i + 1}`;
    if (!e || typeof e !== 'object' || typeof e.file !== 'string' || typeof e.reason !== 'string' || !e.reason.trim()) {
      throw new OverlayError(`${where}: needs a file (a pset path) and a reason`);
    }
    const file = e.file as string;
    if (file.startsWith('/') || file.split('/').includes('..') || !file.includes('/'))
      throw new OverlayError(`${where}: ${file} is not a path inside a paper's folder`);
    if (!existsSync(join(overlayDir, file))) throw new OverlayError(`${where}: the overlay has no file ${file}`);
    if (!existsSync(join(psetDir, file)) || !statSync(join(psetDir, file)).isFile())
      throw new OverlayError(`${where}: the pset has no file ${file} (an overlay replaces files, it adds none)`);
    return { file, reason: (e.reason as string).trim() };
  });
  const listed = new Set(entries.map((e) => e.file));
  const stray = filesUnder(overlayDir).filter((f) => f !== 'overlay.yaml' && !listed.has(f));
  if (stray.length) throw new OverlayError(`${manifest}: the overlay holds file(s) it does not list: ${stray.join(', ')}`);
  const h = createHash('sha256');
  for (const e of [...entries].sort((a, b) => (a.file < b.file ? -1 : 1)))
    h.update(`${e.file}\n${e.reason}\n${sha256(readFileSync(join(overlayDir, e.file)))}\n`);
  return { entries, digest: h.digest('hex') };
}

/** Writes the patched pset to `outDir` (absent or empty); returns the overlay's digest and entries. */
export function applyOverlay(psetDir: string, overlayDir: string, outDir: string): { digest: string; entries: OverlayEntry[] } {
  const { entries, digest } = readOverlay(overlayDir, psetDir);
  if (existsSync(outDir) && readdirSync(outDir).length) throw new OverlayError(`${outDir}: not empty (the patched pset is written to a new folder)`);
  cpSync(psetDir, outDir, { recursive: true });
  for (const e of entries) cpSync(join(overlayDir, e.file), join(outDir, e.file));
  const indexPath = join(outDir, 'papers.yaml');
  const index = parseDocument(readFileSync(indexPath, 'utf8'));
  const byPaper = new Map<string, OverlayEntry[]>();
  for (const e of entries) byPaper.set(e.file.split('/')[0], [...(byPaper.get(e.file.split('/')[0]) ?? []), e]);
  const items = (index.contents as { items?: Array<{ get(k: string): unknown; set(k: string, v: unknown): void }> } | null)?.items ?? [];
  for (const [paper, files] of byPaper) {
    const item = items.find((it) => it.get('id') === paper);
    if (!item) throw new OverlayError(`${join(psetDir, 'papers.yaml')}: no paper "${paper}" (overlay file ${files[0].file})`);
    item.set('rcb_overlay', {
      digest,
      files: files.map((f) => ({ file: f.file.slice(paper.length + 1), reason: f.reason, original_sha256: sha256(readFileSync(join(psetDir, f.file))) })),
    });
  }
  writeFileSync(indexPath, index.toString());
  return { digest, entries };
}
