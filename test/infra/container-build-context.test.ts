/**
 * The evaluation image's build without Docker: the build context `cdk synth` stages is
 * compiled exactly as container/Dockerfile compiles it (its node-build stage runs
 * container/build-app.sh: the same tsc command on the same files), then the runtime
 * stage's COPY lines are replayed into an image root, whose entry point must load every
 * module it imports and find rcb's Python files. A context missing a source (as when
 * entry.ts imported functions/, which the context leaves out) or an image missing a file
 * (tsc emits no .py) fails here, not on the first deploy. `npm run image:check` builds the
 * real image.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EVALUATOR_PYTHON } from '../../infra/evaluation-construct';
import { buildStack, REPO_ROOT, resourcesOfType } from './helpers';

interface DockerInstruction {
  stage: string;
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions (continuation lines joined, comments dropped), each with its stage's name. */
function dockerInstructions(text: string): DockerInstruction[] {
  const out: DockerInstruction[] = [];
  let stage = '';
  const logical = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  for (const line of logical) {
    const [keyword, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (keyword.toUpperCase() === 'FROM') {
      const named = /\bAS\s+(\S+)$/i.exec(args);
      stage = named ? named[1] : 'runtime';
    }
    out.push({ stage, keyword: keyword.toUpperCase(), args });
  }
  return out;
}

let work: string;
let imageRoot: string;
let dockerfile: DockerInstruction[];
let compile: { status: number | null; stderr: string; stdout: string };

beforeAll(() => {
  // The context exactly as `cdk synth` stages it for the image asset.
  const { app } = buildStack();
  const assembly = app.synth();
  const manifest = JSON.parse(readFileSync(join(assembly.directory, 'RcbTest.assets.json'), 'utf8')) as {
    dockerImages: Record<string, { source: { directory: string } }>;
  };
  const [image] = Object.values(manifest.dockerImages);
  const staged = join(assembly.directory, image.source.directory);

  work = mkdtempSync(join(tmpdir(), 'rcb-build-context-'));
  const context = join(work, 'app');
  cpSync(staged, context, { recursive: true });
  dockerfile = dockerInstructions(readFileSync(join(context, 'container', 'Dockerfile'), 'utf8'));
  // What `npm ci` gives the node-build stage; the rest is the context's own files.
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(context, 'node_modules'), 'dir');
  compile = spawnSync('sh', ['container/build-app.sh'], { cwd: context, encoding: 'utf8', timeout: 170_000 });

  // The runtime stage's COPY --from=node-build lines, replayed into an image root.
  imageRoot = join(work, 'image');
  for (const { args } of dockerfile.filter((i) => i.stage === 'runtime' && i.keyword === 'COPY')) {
    const m = /^--from=node-build\s+\/app\/(\S+)\s+(\S+)$/.exec(args);
    if (!m) continue;
    const [, from, to] = m;
    const target = join(imageRoot, to);
    mkdirSync(dirname(target), { recursive: true });
    if (from === 'node_modules') symlinkSync(join(context, 'node_modules'), target, 'dir');
    else if (existsSync(join(context, from))) cpSync(join(context, from), target, { recursive: true });
  }
}, 180_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the evaluation image build context', () => {
  it('is compiled by the Dockerfile with container/build-app.sh, after the whole context is copied in', () => {
    const build = dockerfile.filter((i) => i.stage === 'node-build');
    const copyAll = build.findIndex((i) => i.keyword === 'COPY' && i.args === '. .');
    const run = build.findIndex((i) => i.keyword === 'RUN' && i.args.startsWith('sh container/build-app.sh'));
    expect(copyAll).toBeGreaterThan(-1);
    expect(run).toBeGreaterThan(copyAll);
  });

  it('holds every file entry.ts compiles from: the Dockerfile\'s compile succeeds on it', () => {
    expect({ status: compile.status, output: compile.stdout + compile.stderr }).toEqual({ status: 0, output: '' });
  });

  it('gives the runtime stage package.json, node_modules, dist, resources and examples under /app', () => {
    for (const path of ['package.json', 'node_modules', 'dist/container/entry.js', 'resources/prompt-template.txt', 'examples/pset-mini/papers.yaml']) {
      expect({ path, present: existsSync(join(imageRoot, 'app', path)) }).toEqual({ path, present: true });
    }
  });

  it('puts every one of rcb\'s Python files beside the compiled executor, where it looks for them', () => {
    const names = readdirSync(join(REPO_ROOT, 'adapters', 'local', 'python')).filter((n) => n.endsWith('.py'));
    expect(names).toEqual(expect.arrayContaining(['rcb_driver.py', 'rcb_warm_server.py']));
    for (const name of names) {
      const copied = join(imageRoot, 'app', 'dist', 'adapters', 'local', 'python', name);
      expect({ name, same: existsSync(copied) && readFileSync(copied, 'utf8') === readFileSync(join(REPO_ROOT, 'adapters', 'local', 'python', name), 'utf8') }).toEqual({ name, same: true });
    }
    // The lookup the executor makes, run from the image's compiled code.
    const options = join(imageRoot, 'app', 'dist', 'adapters', 'local', 'executor', 'executor-options.js');
    const r = spawnSync(process.execPath, ['-e', `process.stdout.write(require(${JSON.stringify(options)}).bundledPythonFile('rcb_driver.py'))`], {
      cwd: join(imageRoot, 'app'),
      encoding: 'utf8',
    });
    expect(r.stdout).toBe(join(imageRoot, 'app', 'dist', 'adapters', 'local', 'python', 'rcb_driver.py'));
  });

  it('starts the entry point from the image layout: every module it imports loads, and it asks for its shard', () => {
    const r = spawnSync(process.execPath, ['dist/container/entry.js'], {
      cwd: join(imageRoot, 'app'),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toContain('missing environment variable(s) RCB_RUN_ID, RCB_SHARD, RCB_TABLE, RCB_BUCKET');
    expect(r.status).toBe(1);
  });

  it('names the venv interpreter as RCB_PYTHON in the image and in the task definition, and runs as root', () => {
    const env = dockerfile.filter((i) => i.stage === 'runtime' && i.keyword === 'ENV').map((i) => i.args).join(' ');
    expect(env).toMatch(new RegExp(`(^|\\s)RCB_PYTHON=${EVALUATOR_PYTHON}(\\s|$)`));
    expect(dockerfile.filter((i) => i.stage === 'runtime' && i.keyword === 'USER')).toEqual([]);
    const [task] = Object.values(resourcesOfType(buildStack().template, 'AWS::ECS::TaskDefinition'));
    const [container] = task.Properties?.ContainerDefinitions as Array<{ Environment: Array<{ Name: string; Value: unknown }>; User: string }>;
    expect(container.Environment).toEqual(expect.arrayContaining([{ Name: 'RCB_PYTHON', Value: EVALUATOR_PYTHON }]));
    expect(container.User).toBe('0:0');
  });
});
