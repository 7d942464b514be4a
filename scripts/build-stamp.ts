/**
 * The build's stamp: `dist/.sources-digest` holds a digest of every source the build
 * compiles (the folders tsconfig.build.json includes, and the two tsconfig files), written
 * after `tsc -p tsconfig.build.json` (`npm run build`, and `npm test`'s type check). The
 * tests run the `rcb` command line from dist/ when the stamp matches the sources as they are
 * now (test/helpers/cli.ts): the command a user runs, and a start that costs less than half
 * the CPU of compiling on the fly through tsx, which the suite pays hundreds of times. A
 * source changed since the build makes the digest differ, and the tests fall back to tsx.
 *
 * `tsx scripts/build-stamp.ts` writes the stamp.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The folders tsconfig.build.json includes. */
export const BUILD_SOURCE_DIRS = ['core', 'app', 'adapters', 'emulator', 'functions', 'container', 'infra', 'bin'];
export const STAMP_FILE = '.sources-digest';

/** sha256 over the path and content of every .ts file of the build and the tsconfig files, in a fixed order. */
export function buildSourcesDigest(root: string): string {
  const files: string[] = ['tsconfig.json', 'tsconfig.build.json'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) files.push(path);
    }
  };
  for (const dir of BUILD_SOURCE_DIRS) walk(dir);
  files.sort();
  const hash = createHash('sha256');
  for (const file of files) {
    const content = readFileSync(join(root, file));
    hash.update(`${file}\0${content.length}\0`);
    hash.update(content);
  }
  return hash.digest('hex');
}

/** True when dist/ was built from the sources as they are now. */
export function distIsCurrent(root: string): boolean {
  try {
    return readFileSync(join(root, 'dist', STAMP_FILE), 'utf8').trim() === buildSourcesDigest(root);
  } catch {
    return false;
  }
}

if (require.main === module) {
  const root = join(__dirname, '..');
  writeFileSync(join(root, 'dist', STAMP_FILE), `${buildSourcesDigest(root)}\n`);
}
