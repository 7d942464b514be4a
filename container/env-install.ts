/**
 * The image's Python environment, installed by the same code as `rcb env install`
 * (adapters/local/paper-env/install.ts) from the same lock. Run by container/Dockerfile's
 * python-pypi stage as `node dist/container/env-install.js --dir D --lock F --wheelhouse W [--offline]`:
 *   - `npm run image:check -- --python-layer pypi` mounts the host's wheelhouse (filled by
 *     `rcb env install`, with the wheels it built in wheelhouse/built/) and passes --offline:
 *     the build has no network and compiles nothing;
 *   - a production build (`cdk deploy`) fetches from the index pip is configured with.
 * Then the papers' test-time assets (container/requirements-assets.json), unless --offline.
 */
import { readFileSync } from 'node:fs';
import { EnvInstallError, installEnv, readRecipes } from '../adapters/local/paper-env/install';
import { LockError, lockCompanion, parseLock } from '../adapters/local/paper-env/lock';
import { fetchAssets, readEnvNotes } from '../adapters/local/paper-env/assets';

interface Args {
  dir: string;
  lock: string;
  wheelhouse: string;
  basePython: string;
  offline: boolean;
}

export function parseEnvInstallArgs(argv: string[]): Args {
  const out: Partial<Args> = { offline: false, basePython: 'python3' };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--offline') {
      out.offline = true;
      continue;
    }
    const value = argv[++i];
    if (value === undefined) throw new Error(`env-install: ${flag} needs a value`);
    if (flag === '--dir') out.dir = value;
    else if (flag === '--lock') out.lock = value;
    else if (flag === '--wheelhouse') out.wheelhouse = value;
    else if (flag === '--base-python') out.basePython = value;
    else throw new Error(`env-install: unknown flag ${flag}`);
  }
  for (const k of ['dir', 'lock', 'wheelhouse'] as const) if (!out[k]) throw new Error(`env-install: --${k} is required`);
  return out as Args;
}

async function main(): Promise<number> {
  const args = parseEnvInstallArgs(process.argv.slice(2));
  const lock = parseLock(readFileSync(args.lock, 'utf8'), args.lock);
  const started = Date.now();
  const result = await installEnv({
    dir: args.dir,
    wheelhouse: args.wheelhouse,
    lock,
    lockFile: args.lock,
    recipes: readRecipes(lockCompanion(args.lock, 'recipes')),
    basePython: args.basePython,
    offline: args.offline,
    progress: (line) => process.stderr.write(`env-install: ${line}\n`),
  });
  process.stderr.write(`env-install: ${result.packages} packages in ${args.dir} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  // The papers' test-time assets (REPA-E's VGG16 weights): fetched when the build reaches
  // their host, reported and left out otherwise (an --offline build fetches nothing).
  await fetchAssets({
    envDir: args.dir,
    python: result.python,
    assets: readEnvNotes(lockCompanion(args.lock, 'assets')).assets,
    offline: args.offline,
    progress: (line) => process.stderr.write(`env-install: ${line}\n`),
  });
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      const known = err instanceof EnvInstallError || err instanceof LockError;
      process.stderr.write(`env-install: ${known ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
