/**
 * The evaluation image's build without Docker: the build context `cdk synth` stages is
 * built exactly as container/Dockerfile builds it (its node-build stage runs
 * container/build-app.sh: one esbuild bundle of entry.ts and the Python files beside it),
 * then the runtime stage's COPY lines are replayed into the image's /app
 * (emulator/container-app.ts, which the emulator's shard containers start from). A context
 * missing a source (as when entry.ts imported functions/, which the context leaves out) or
 * an image missing a file (esbuild bundles no .py) fails here, not on the first deploy.
 * `npm run image:check` builds the real image.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EVALUATOR_PYTHON } from '../../infra/evaluation-construct';
import { containerApp, dockerInstructions, imageContextOf, type ContainerApp, type DockerInstruction } from '../../emulator/container-app';
import { REPO_ROOT, resourcesOfType, sharedStack } from './helpers';

let cache: string;
let dockerfile: DockerInstruction[];
let app: ContainerApp | undefined;
let buildError: string | undefined;

beforeAll(() => {
  // The context exactly as `cdk synth` stages it for the image asset.
  const { assemblyDir, artifactId } = sharedStack();
  const context = imageContextOf(assemblyDir, artifactId);
  dockerfile = dockerInstructions(readFileSync(join(context.directory, 'container', 'Dockerfile'), 'utf8'));
  cache = mkdtempSync(join(tmpdir(), 'rcb-build-context-'));
  try {
    app = containerApp(context, cache);
  } catch (e) {
    buildError = (e as Error).message;
  }
}, 180_000);

afterAll(() => {
  if (cache) rmSync(cache, { recursive: true, force: true });
});

describe('the evaluation image build context', () => {
  it('is compiled by the Dockerfile with container/build-app.sh, after the whole context is copied in', () => {
    const build = dockerfile.filter((i) => i.stage === 'node-build');
    const copyAll = build.findIndex((i) => i.keyword === 'COPY' && i.args === '. .');
    const run = build.findIndex((i) => i.keyword === 'RUN' && i.args.startsWith('sh container/build-app.sh'));
    expect(copyAll).toBeGreaterThan(-1);
    expect(run).toBeGreaterThan(copyAll);
  });

  it("holds every file entry.ts imports: the Dockerfile's build succeeds on it", () => {
    expect(buildError).toBeUndefined();
    expect(app?.built).toBe(true);
  });

  it('gives the runtime /app package.json, the bundle, resources and examples, and no node_modules', () => {
    const root = app!.appDir;
    expect(readdirSync(root).sort()).toEqual(['dist', 'examples', 'package.json', 'resources']);
    for (const path of [
      'dist/container/entry.js',
      'dist/container/entry.js.map',
      'resources/prompt-template.txt',
      'resources/models.yaml',
      'examples/pset-mini/papers.yaml',
    ]) {
      expect({ path, present: existsSync(join(root, path)) }).toEqual({ path, present: true });
    }
    expect(readdirSync(join(root, 'dist')).sort()).toEqual(['container', 'python']);
  });

  it("puts every one of rcb's Python files where the bundled executor looks for them (../python from its module: dist/python)", () => {
    const names = readdirSync(join(REPO_ROOT, 'adapters', 'executor', 'python')).filter((n) => n.endsWith('.py'));
    expect(names).toEqual(expect.arrayContaining(['rcb_driver.py', 'rcb_warm_server.py']));
    for (const name of names) {
      const copied = join(app!.appDir, 'dist', 'python', name);
      expect({
        name,
        same: existsSync(copied) && readFileSync(copied, 'utf8') === readFileSync(join(REPO_ROOT, 'adapters', 'executor', 'python', name), 'utf8'),
      }).toEqual({ name, same: true });
    }
  });

  it("starts the image's CMD from /app: the bundle loads every module, and it asks for its shard", () => {
    expect(app!.command).toEqual(['--enable-source-maps', join(app!.appDir, 'dist', 'container', 'entry.js')]);
    const r = spawnSync(process.execPath, app!.command, {
      cwd: app!.appDir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toContain('missing environment variable(s) RCB_RUN_ID, RCB_SHARD, RCB_TABLE, RCB_BUCKET');
    expect(r.status).toBe(1);
  });

  it('is built once per context digest: a second call finds it in the cache', () => {
    const { assemblyDir, artifactId } = sharedStack();
    const again = containerApp(imageContextOf(assemblyDir, artifactId), cache);
    expect(again).toEqual({ ...app, built: false });
  });

  it('names the venv interpreter as RCB_PYTHON in the image and in the task definition, and runs as root', () => {
    const env = dockerfile
      .filter((i) => i.stage === 'runtime' && i.keyword === 'ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).toMatch(new RegExp(`(^|\\s)RCB_PYTHON=${EVALUATOR_PYTHON}(\\s|$)`));
    expect(dockerfile.filter((i) => i.stage === 'runtime' && i.keyword === 'USER')).toEqual([]);
    const [task] = Object.values(resourcesOfType(sharedStack().template, 'AWS::ECS::TaskDefinition'));
    const [container] = task.Properties!.ContainerDefinitions as Array<{ Environment: Array<{ Name: string; Value: unknown }>; User: string }>;
    expect(container.Environment).toEqual(expect.arrayContaining([{ Name: 'RCB_PYTHON', Value: EVALUATOR_PYTHON }]));
    expect(container.User).toBe('0:0');
  });
});
