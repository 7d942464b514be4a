/**
 * The image's env-installer stage bundles container/env-install.ts from the files its COPY
 * lines bring in, and nothing else of the checkout: a source the installer imports that no
 * COPY brings fails the production build (PYTHON_LAYER=pypi) at `cdk deploy`. Here the
 * installer's import graph, as esbuild resolves it, is held against those COPY lines.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { buildSync } from 'esbuild';
import { dockerInstructions } from '../../emulator/container-app';
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
});
