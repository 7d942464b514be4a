/**
 * A test's child process that runs as another user (`nobody`) cannot read the checkout when
 * it lies in a folder only its owner may enter (a home or /root at mode 700): node_modules,
 * tsx and the sources are out of its reach. So the child's entry point is bundled with
 * esbuild, with everything it imports, into a new folder every user can read, and the
 * executor's Python files are put beside it where the bundled code looks for them
 * (adapters/executor/executor-options.ts, pythonFile). One bundle per entry point and process.
 */
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { buildSync } from 'esbuild';
import { REPO } from './cli';

const bundles = new Map<string, string>();
let folder: string | undefined;

/** The folder every bundle of this process goes in, removed when the process exits. */
function readableFolder(): string {
  if (folder) return folder;
  const dir = mkdtempSync(join(tmpdir(), 'rcb-readable-'));
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'bundle'), { mode: 0o755 });
  mkdirSync(join(dir, 'python'), { mode: 0o755 });
  const python = join(REPO, 'adapters', 'executor', 'python');
  for (const name of readdirSync(python).filter((n) => n.endsWith('.py'))) {
    copyFileSync(join(python, name), join(dir, 'python', name));
    chmodSync(join(dir, 'python', name), 0o644);
  }
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return (folder = dir);
}

/** `entry` (a TypeScript file of the checkout) as one CommonJS file any user can run with `node`. */
export function readableBundle(entry: string): string {
  const known = bundles.get(entry);
  if (known) return known;
  const outfile = join(readableFolder(), 'bundle', `${basename(entry, '.ts')}.cjs`);
  buildSync({ entryPoints: [entry], outfile, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'error' });
  chmodSync(outfile, 0o644);
  bundles.set(entry, outfile);
  return outfile;
}
