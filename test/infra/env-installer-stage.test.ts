/**
 * The image's env-installer stage bundles container/env-install.ts from the files its COPY
 * lines bring in, and nothing else of the checkout: a source the installer imports that no
 * COPY brings fails the production build (PYTHON_LAYER=pypi) at `cdk deploy`. Here the
 * installer's import graph, as esbuild resolves it, is held against those COPY lines.
 *
 * The python-pypi stage runs that installer with `--lock F`; it reads the build recipes and the
 * test-time assets beside F (LOCK_COMPANIONS). A companion missing there is read as empty, so
 * the build would succeed and silently fetch no asset (REPA-E's VGG16 weights): here every
 * companion must be copied into F's folder, and the production branch must not be --offline.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, posix, relative } from 'node:path';
import { buildSync } from 'esbuild';
import { dockerInstructions } from '../../emulator/container-app';
import { LOCK_COMPANIONS } from '../../adapters/local/paper-env/lock';
import { REPO } from '../helpers/cli';

describe('the env-installer stage of container/Dockerfile', () => {
  it('copies every source file container/env-install.ts imports', () => {
    // Prepare: what the stage copies from the build context (files or folders).
    const instructions = dockerInstructions(readFileSync(join(REPO, 'container', 'Dockerfile'), 'utf8'));
    const copied = instructions
      .filter((i) => i.stage === 'env-installer' && i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    expect(copied).toContain('container/env-install.ts');

    // Act: the installer's bundle as the stage makes it, with its inputs listed.
    const result = buildSync({
      entryPoints: [join(REPO, 'container', 'env-install.ts')],
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      write: false,
      metafile: true,
      logLevel: 'silent',
      outfile: join(REPO, 'env-install.js'),
    });

    // Assess
    const sources = Object.keys(result.metafile.inputs)
      .map((p) => relative(REPO, join(REPO, p)))
      .filter((p) => !p.startsWith('node_modules/'));
    expect(sources.length).toBeGreaterThan(1);
    const uncovered = sources.filter((s) => !copied.some((c) => s === c || s.startsWith(`${c.replace(/\/$/, '')}/`)));
    expect(uncovered).toEqual([]);
  });

  it('copies the lock and every file the installer reads beside it into the folder of its --lock', () => {
    // Prepare: the python-pypi stage's installer runs and its COPY lines from the build context.
    const stage = dockerInstructions(readFileSync(join(REPO, 'container', 'Dockerfile'), 'utf8')).filter((i) => i.stage === 'python-pypi');
    const installs = stage.filter((i) => i.keyword === 'RUN').flatMap((i) => i.args.split(/;|&&/).filter((cmd) => cmd.includes('env-install.js')));
    const locks = [...new Set(installs.map((cmd) => /--lock\s+(\S+)/.exec(cmd)?.[1]))];
    const copies = stage
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .map((i) => {
        const words = i.args.split(/\s+/);
        return { sources: words.slice(0, -1), dest: words.at(-1)! };
      });

    // Act: where each file the installer reads lands in the stage.
    expect(locks).toHaveLength(1);
    const lock = locks[0]!;
    const wanted = [basename(lock), ...Object.values(LOCK_COMPANIONS)];
    const landing = (file: string) =>
      copies.filter((c) => c.sources.includes(`container/${file}`)).map((c) => (c.dest.endsWith('/') ? posix.join(c.dest, file) : c.dest));

    // Assess: each one is in the repository and lands beside the lock.
    for (const file of wanted) {
      expect(existsSync(join(REPO, 'container', file))).toBe(true);
      expect({ file, at: landing(file) }).toEqual({ file, at: [posix.join(dirname(lock), file)] });
    }
    // Two branches: the host's wheelhouse (image:check, --offline: no network, no asset
    // fetched) and the production build, which fetches the assets where their host answers.
    expect(installs.filter((cmd) => cmd.includes('--offline'))).toHaveLength(1);
    expect(installs.filter((cmd) => !cmd.includes('--offline'))).toHaveLength(1);
  });

  it("puts the environment's layer before every layer that changes with rcb's code or Node.js", () => {
    // A layer's cache key is its parent's: the venv copied after Node.js or the bundle would be
    // copied, stored and pushed again with every release, though the lock did not change.
    const runtime = dockerInstructions(readFileSync(join(REPO, 'container', 'Dockerfile'), 'utf8')).filter((i) => i.stage === 'runtime');
    const layers = runtime.filter((i) => i.keyword === 'COPY' || i.keyword === 'RUN');
    const venv = layers.findIndex((i) => i.keyword === 'COPY' && /^--from=python-build\s+\/opt\/venv\s/.test(i.args));
    const fromBuild = layers.flatMap((i, at) => (i.keyword === 'COPY' && i.args.startsWith('--from=node-build') ? [at] : []));
    expect(venv).toBeGreaterThan(-1);
    expect(fromBuild.length).toBeGreaterThan(0);
    expect(Math.min(...fromBuild)).toBeGreaterThan(venv);
    // Before it only the base's own packages (a RUN that reads no build stage).
    expect(layers.slice(0, venv).every((i) => i.keyword === 'RUN' && !i.args.includes('/app'))).toBe(true);
  });
});
