/**
 * Links from a report into rcb's manual (docs/), in place of internal section numbers. The
 * page is one file a reader may open anywhere, so a link points at the manual of the rcb that
 * wrote it when that copy has one, and otherwise names the page as plain text.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** docs/ of this checkout: two folders up from core/report, three from dist/core/report. */
function docsRoot(): string | null {
  for (const up of ['../..', '../../..']) {
    const dir = resolve(__dirname, up, 'docs');
    if (existsSync(join(dir, 'README.md'))) return dir;
  }
  return null;
}

const ROOT = docsRoot();

/** `<a>` to docs/PAGE#ANCHOR showing TEXT, or TEXT with the page named when no manual is at hand. */
export function docLink(page: string, anchor: string, text: string, esc: (s: string) => string): string {
  if (!ROOT || !existsSync(join(ROOT, page))) return `${esc(text)} (rcb's docs/${esc(page)})`;
  const href = `${pathToFileURL(join(ROOT, page)).href}${anchor ? `#${anchor}` : ''}`;
  return `<a class="doc" href="${esc(href)}">${esc(text)}</a>`;
}
