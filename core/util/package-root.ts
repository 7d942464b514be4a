import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

let cached: string | undefined;

/**
 * The folder holding rcb's package.json, found by walking up from this file, so that
 * shipped resources (resources/, examples/) resolve the same from sources (ts-jest, tsx)
 * and from the compiled dist/ tree.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = __dirname;
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'resources'))) return (cached = dir);
    const up = dirname(dir);
    if (up === dir) throw new Error(`rcb: cannot find the package root above ${__dirname}`);
    dir = up;
  }
}

/**
 * Path of a file shipped in resources/. A Lambda bundle is one file with its resources/
 * beside it (infra/rcb-function.ts copies them there) and no package.json above it: that
 * folder is looked at first; from sources or dist/ it does not exist and the package root's is used.
 */
export function resourcePath(name: string): string {
  // The folder decides, not the file: a bundle without an optional file must not look for a checkout.
  const beside = join(__dirname, 'resources');
  if (existsSync(beside)) return join(beside, name);
  return join(packageRoot(), 'resources', name);
}
