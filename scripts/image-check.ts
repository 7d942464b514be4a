/**
 * `npm run image:check [-- --python-layer debian|pypi] [--sandbox none|uid|auto|bwrap] [--papers a,b]
 *   [--jobs N] [--suite S] [--mirror URL] [--pset DIR] [--wheelhouse DIR] [--reference RUN_DIR]`
 *
 * --python-layer pypi builds the production image (PYTHON_LAYER=pypi: the lock
 * container/requirements.txt) instead, on a Debian bookworm base (Python 3.11, as the lock)
 * holding this machine's Node.js, installing offline from the wheelhouse `rcb env install`
 * filled (--wheelhouse, default $RCB_WHEELHOUSE or ~/.rcb/wheelhouse, mounted into the
 * build), and runs the real pset (--pset, default $RCB_REAL_PSET or ../shared's) in it.
 * --reference takes the verdicts of an `rcb run --model oracle --model empty` already made
 * (its --out folder) instead of running it again.
 *
 * Builds the real evaluation image here, without Docker Hub or PyPI, and runs shards of
 * examples/pset-mini in it the way Fargate would, against the emulator's local DynamoDB
 * and S3; the verdicts must equal a local run's. Not part of `npm test` (80 s warm on 2
 * cores; minutes more the first time, see docs/cloud.md, "Check the image offline"). Steps:
 *   1. a base image with Node.js and Debian's Python 3 / python3-numpy / python3-torch, made
 *      once with mmdebstrap from this machine's Debian mirror and `podman import`ed;
 *   2. the stack synthesized (as `cdk synth` does, bundling aside) and container/Dockerfile
 *      built with podman from the build context it stages, with the Dockerfile's build args
 *      pointing at that base and PYTHON_LAYER=debian, with no network: npm packages come
 *      from this machine's npm cache, mounted as an overlay (the build's writes to it are
 *      discarded);
 *   3. a probe container with the task definition's constraints reports them: user,
 *      capabilities, read-only root, writable /scratch, user namespaces refused;
 *   4. a run planned and answered (oracle, empty) on local dynalite and s3rver, one container
 *      per paper (shard), then the same run locally with `rcb run`, verdicts compared.
 * Everything podman keeps (configuration, images, layers) is under RCB_IMAGE_CHECK_DIR
 * (default /var/tmp/rcb-image-check); the machine's own podman configuration is not read.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import Database from 'better-sqlite3';
import { RcbStack } from '../infra/rcb-stack';
import { EVALUATOR_CONTAINER_NAME } from '../infra/evaluation-construct';
import { packageRoot, resourcePath } from '../core/util/package-root';
import { loadPset } from '../core/pset/read-pset';
import { loadTemplate } from '../core/prompt/template';
import { runId as computeRunId } from '../core/ids';
import type { RunSpec, Verdict } from '../core/records';
import type { QueuedGeneration, TaskQueue } from '../core/cloud/ports';
import { uploadPromptTemplate, uploadPsetBundle } from '../core/cloud/pset-bundle';
import { planCloudRun } from '../core/cloud/plan-cloud-run';
import { generateTask } from '../core/cloud/generate-task';
import { loadRunContext } from '../core/cloud/run-context';
import { EmptyModel, OracleModel } from '../adapters/models/offline';
import { parseLock } from '../adapters/local/paper-env/lock';
import { filesInWheelhouse } from '../adapters/local/paper-env/install';
import { defaultWheelhouse } from '../adapters/local/paper-env/location';
import type { ModelClient } from '../core/model';
import { imageFitsTask } from '../infra/ephemeral-storage';
import { startLocalAws } from '../emulator/local-aws';
import { createStorageAdapters } from '../adapters/aws/runtime/cloud-adapters';
import {
  capabilityNames,
  containersConf,
  debianMirror,
  shardRunArgs,
  storageConf,
  userNamespaceRefusingProfile,
  type SynthContainerDefinition,
} from './image-check-fargate';

const SANDBOXES = ['none', 'uid', 'auto', 'bwrap'] as const;
type Sandbox = (typeof SANDBOXES)[number];

/** Debian packages of the base image: what the image's stages need and the tests import. */
const BASE_PACKAGES = ['nodejs', 'npm', 'python3', 'python3-venv', 'python3-numpy', 'python3-torch', 'bubblewrap', 'libgomp1', 'ca-certificates'];
/**
 * The pypi layer's base: Python 3.11 (the lock's) and what the runtime needs, from bookworm;
 * Node.js is this machine's (bookworm's nodejs is 18, rcb needs 20), copied in.
 */
const PYPI_BASE_PACKAGES = ['python3', 'python3-venv', 'bubblewrap', 'libgomp1', 'libstdc++6', 'ca-certificates'];
const PYTHON_LAYERS = ['debian', 'pypi'] as const;
type PythonLayer = (typeof PYTHON_LAYERS)[number];
const IMAGE = 'localhost/rcb-evaluator:image-check';

interface Options {
  pythonLayer: PythonLayer;
  pset: string;
  wheelhouse: string;
  reference: string | undefined;
  sandbox: Sandbox;
  papers: string[] | null;
  jobs: number;
  suite: string;
  mirror: string | undefined;
  dir: string;
}

function realPset(): string {
  return process.env.RCB_REAL_PSET || join(packageRoot(), '..', 'shared', 'data', 'researchcodebench', 'pset');
}

function parseArgs(argv: string[]): Options {
  const opts: Options = {
    pythonLayer: 'debian',
    pset: '',
    wheelhouse: defaultWheelhouse(),
    reference: undefined,
    sandbox: 'none',
    papers: null,
    jobs: 2,
    suite: '',
    mirror: undefined,
    dir: process.env.RCB_IMAGE_CHECK_DIR || '/var/tmp/rcb-image-check',
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`image:check: ${flag} needs a value`);
      return v;
    };
    if (flag === '--sandbox') {
      const v = value();
      if (!(SANDBOXES as readonly string[]).includes(v)) throw new Error(`image:check: --sandbox must be one of ${SANDBOXES.join(', ')}; got ${v}`);
      opts.sandbox = v as Sandbox;
    } else if (flag === '--papers') opts.papers = value().split(',').filter(Boolean);
    else if (flag === '--jobs') opts.jobs = Number(value());
    else if (flag === '--suite') opts.suite = value();
    else if (flag === '--mirror') opts.mirror = value();
    else if (flag === '--python-layer') {
      const v = value();
      if (!(PYTHON_LAYERS as readonly string[]).includes(v))
        throw new Error(`image:check: --python-layer must be one of ${PYTHON_LAYERS.join(', ')}; got ${v}`);
      opts.pythonLayer = v as PythonLayer;
    } else if (flag === '--pset') opts.pset = value();
    else if (flag === '--wheelhouse') opts.wheelhouse = value();
    else if (flag === '--reference') opts.reference = value();
    else throw new Error(`image:check: unknown flag ${flag}`);
  }
  if (!Number.isInteger(opts.jobs) || opts.jobs < 1) throw new Error('image:check: --jobs must be a positive integer');
  // The lock is for Python 3.11: bookworm's. The Debian layer needs trixie's python3-torch.
  if (!opts.suite) opts.suite = opts.pythonLayer === 'pypi' ? 'bookworm' : 'trixie';
  if (!opts.pset) opts.pset = opts.pythonLayer === 'pypi' ? realPset() : join(packageRoot(), 'examples', 'pset-mini');
  return opts;
}

const t0 = Date.now();
function say(message: string): void {
  process.stderr.write(`[image:check ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${message}\n`);
}

/** Runs a command to its end; its output goes to ours; throws naming it when it fails. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, opts: { quiet?: boolean } = {}): string {
  const r = spawnSync(cmd, args, { env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', opts.quiet ? 'pipe' : 'inherit'] });
  if (r.error) throw new Error(`image:check: ${cmd} could not start: ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(
      `image:check: ${cmd} ${args.slice(0, 3).join(' ')} ... exited ${r.status}${opts.quiet ? `: ${r.stderr.trim().split('\n').slice(-5).join(' | ')}` : ''}`,
    );
  return r.stdout;
}

/** Spawned asynchronously: the local DynamoDB and S3 live in this process and must keep answering. */
function runAsync(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (stdout += d));
    child.stderr.on('data', (d: string) => {
      stderr += d;
      if (stderr.length > 256_000) stderr = stderr.slice(-128_000);
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function preflight(): void {
  const missing = ['podman', 'mmdebstrap', 'runc'].filter((cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status !== 0);
  if (missing.length > 0) {
    throw new Error(`image:check: ${missing.join(', ')} not found; install them with: apt-get install -y podman buildah mmdebstrap uidmap runc`);
  }
  if (process.getuid?.() !== 0) throw new Error('image:check: run it as root (mmdebstrap and podman here run rootful)');
}

/** Podman's environment: its configuration and storage under the check's directory only. */
function podmanEnv(dir: string): NodeJS.ProcessEnv {
  mkdirSync(join(dir, 'storage'), { recursive: true });
  mkdirSync(join(dir, 'run'), { recursive: true });
  const nofile = Number(spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()) || 1024;
  writeFileSync(join(dir, 'containers.conf'), containersConf({ nofileHardLimit: nofile }));
  writeFileSync(join(dir, 'storage.conf'), storageConf({ graphRoot: join(dir, 'storage'), runRoot: join(dir, 'run') }));
  return { ...process.env, CONTAINERS_CONF: join(dir, 'containers.conf'), CONTAINERS_STORAGE_CONF: join(dir, 'storage.conf') };
}

function machineMirror(): string {
  const files = [
    '/etc/apt/sources.list',
    ...(existsSync('/etc/apt/sources.list.d') ? readdirSync('/etc/apt/sources.list.d').map((f) => join('/etc/apt/sources.list.d', f)) : []),
  ];
  for (const file of files) {
    if (!existsSync(file)) continue;
    const mirror = debianMirror(readFileSync(file, 'utf8'));
    if (mirror) return mirror;
  }
  throw new Error('image:check: no Debian mirror in /etc/apt/sources.list(.d); pass --mirror URL');
}

/** mmdebstrap's hooks that copy this machine's Node.js (binary and npm) into the pypi layer's base. */
function hostNodeHooks(): string[] {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 20) throw new Error(`image:check: --python-layer pypi copies this machine's Node.js into the image; it is ${process.version}, rcb needs >= 20`);
  const node = run('sh', ['-c', 'readlink -f "$(command -v node)"'], process.env, { quiet: true }).trim();
  const npmCli = run('sh', ['-c', 'readlink -f "$(command -v npm)"'], process.env, { quiet: true }).trim();
  const npmDir = npmCli.replace(/\/bin\/npm-cli\.js$/, '');
  if (npmDir === npmCli || !existsSync(join(npmDir, 'package.json'))) throw new Error(`image:check: cannot find npm's folder from ${npmCli}`);
  return [
    '--customize-hook=mkdir -p "$1/usr/lib/node_modules"',
    `--customize-hook=copy-in ${node} /usr/bin`,
    `--customize-hook=copy-in ${npmDir} /usr/lib/node_modules`,
    '--customize-hook=ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/bin/npm"',
    '--customize-hook=ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/bin/npx"',
    `--customize-hook=chroot "$1" sh -c '[ "$(readlink -f /usr/bin/node)" = /usr/bin/node ] || ln -sf ${node.split('/').pop()} /usr/bin/node'`,
  ];
}

function ensureBase(opts: Options, env: NodeJS.ProcessEnv): string {
  const pypi = opts.pythonLayer === 'pypi';
  const base = pypi ? `localhost/rcb-check-base-pypi:${opts.suite}` : `localhost/rcb-check-base:${opts.suite}`;
  if (spawnSync('podman', ['image', 'exists', base], { env }).status === 0) {
    say(`base image ${base} already built`);
    return base;
  }
  const mirror = opts.mirror ?? machineMirror();
  const tar = join(opts.dir, `rootfs-${opts.suite}.tar`);
  const packages = pypi ? PYPI_BASE_PACKAGES : BASE_PACKAGES;
  say(`mmdebstrap ${opts.suite} from ${mirror}: ${packages.join(' ')}${pypi ? ` and this machine's Node.js ${process.version}` : ''}`);
  run('mmdebstrap', ['--variant=minbase', `--include=${packages.join(',')}`, ...(pypi ? hostNodeHooks() : []), opts.suite, tar, mirror], env, { quiet: true });
  say(`podman import ${tar}`);
  run('podman', ['import', tar, base], env, { quiet: true });
  rmSync(tar, { force: true });
  return base;
}

export interface Synth {
  context: string;
  dockerfile: string;
  container: SynthContainerDefinition;
  /** The shard task's ephemeral storage, GiB (20 when the template sets none). */
  ephemeralGiB: number;
}

/** The stack as `cdk synth` makes it (cdk.json's context), bundling aside: the image asset's context and the task definition. */
export function synthesize(dir: string): Synth {
  const root = packageRoot();
  const cdkJson = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  const outdir = join(dir, 'cdk.out');
  rmSync(outdir, { recursive: true, force: true });
  const app = new App({ outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
  const stack = new RcbStack(app, 'RcbImageCheck', { analyticsReporting: false });
  const assembly = app.synth();
  const manifest = JSON.parse(readFileSync(join(assembly.directory, `${stack.artifactId}.assets.json`), 'utf8')) as {
    dockerImages: Record<string, { source: { directory: string; dockerFile?: string; dockerBuildArgs?: Record<string, string> } }>;
  };
  const images = Object.values(manifest.dockerImages);
  if (images.length !== 1) throw new Error(`image:check: expected one image asset, found ${images.length}`);
  const template = JSON.parse(readFileSync(join(assembly.directory, stack.templateFile), 'utf8')) as {
    Resources: Record<
      string,
      { Type: string; Properties: { ContainerDefinitions?: Array<SynthContainerDefinition & { Name: string }>; EphemeralStorage?: { SizeInGiB: number } } }
    >;
  };
  const tasks = Object.values(template.Resources).filter((r) => r.Type === 'AWS::ECS::TaskDefinition');
  const container = tasks.flatMap((t) => t.Properties.ContainerDefinitions ?? []).find((c) => c.Name === EVALUATOR_CONTAINER_NAME);
  if (!container) throw new Error(`image:check: no ${EVALUATOR_CONTAINER_NAME} container in the synthesized template`);
  const task = tasks.find((t) => t.Properties.ContainerDefinitions?.some((c) => c.Name === EVALUATOR_CONTAINER_NAME));
  return {
    context: join(assembly.directory, images[0].source.directory),
    dockerfile: images[0].source.dockerFile ?? 'Dockerfile',
    container,
    ephemeralGiB: task?.Properties.EphemeralStorage?.SizeInGiB ?? 20,
  };
}

/** The pypi layer installs offline from the host's wheelhouse: every locked file must be in it, and each sdist's built wheel. */
async function checkWheelhouse(wheelhouse: string, synth: Synth): Promise<void> {
  const lockFile = join(synth.context, 'container', 'requirements.txt');
  const lock = parseLock(readFileSync(lockFile, 'utf8'), lockFile);
  const hint = `fill it first with \`rcb env install --wheelhouse ${wheelhouse}\``;
  const have = await filesInWheelhouse(wheelhouse, lock.entries);
  const missing = lock.entries.filter((e) => !have.has(e.name));
  if (missing.length)
    throw new Error(
      `image:check: the wheelhouse ${wheelhouse} lacks ${missing.length} locked file(s) (${missing
        .map((e) => e.name)
        .slice(0, 8)
        .join(', ')}); ${hint}`,
    );
  if (!existsSync(join(wheelhouse, 'built'))) throw new Error(`image:check: ${wheelhouse}/built holds no built wheel; ${hint}`);
}

function buildImage(synth: Synth, base: string, env: NodeJS.ProcessEnv, opts: Options): void {
  // The npm packages come from this machine's npm cache, mounted as an overlay (the build's
  // writes to it are thrown away), so the build needs no network at all.
  const npmCache = spawnSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).stdout.trim();
  if (!npmCache || !existsSync(join(npmCache, '_cacache')))
    throw new Error(`image:check: no npm cache at ${npmCache || '(npm config get cache)'}; run npm ci once`);
  const args = [
    'build',
    '--pull=never',
    '--network=none',
    `--volume=${npmCache}:/npm-cache:O`,
    '--build-arg=NPM_CONFIG_CACHE=/npm-cache',
    '--build-arg=NPM_CONFIG_OFFLINE=true',
    `--file=${join(synth.context, synth.dockerfile)}`,
    `--build-arg=NODE_BUILD_IMAGE=${base}`,
    `--build-arg=PYTHON_IMAGE=${base}`,
    `--build-arg=PYTHON_LAYER=${opts.pythonLayer}`,
    ...(opts.pythonLayer === 'pypi' ? [`--volume=${opts.wheelhouse}:/wheelhouse:O`] : []),
    `--tag=${IMAGE}`,
    synth.context,
  ];
  run('podman', args, env);
}

/** A task queue that keeps what PlanRun sends, for this process to answer. */
class KeptQueue implements TaskQueue {
  readonly sent: QueuedGeneration[] = [];
  async send(messages: QueuedGeneration[]): Promise<void> {
    this.sent.push(...messages);
  }
}

type Judgement = Pick<Verdict, 'officialPass' | 'strictPass' | 'failureClass'>;
const judgement = (v: Verdict): Judgement => ({ officialPass: v.officialPass, strictPass: v.strictPass, failureClass: v.failureClass });

/** The same run locally (`rcb run`, bubblewrap on this host), verdicts by task id. */
function localVerdicts(papers: string[], pset: string, scratch: string, reference: string | undefined): Map<string, Judgement> {
  const out = reference ?? join(scratch, 'local-run');
  const r = reference
    ? { status: 0, stderr: '' }
    : spawnSync(
        process.execPath,
        [
          '-r',
          require.resolve('tsx/cjs'),
          join(packageRoot(), 'bin', 'rcb.ts'),
          'run',
          '--pset',
          pset,
          '--model',
          'oracle',
          '--model',
          'empty',
          '--papers',
          papers.join(','),
          '--out',
          out,
        ],
        { encoding: 'utf8', cwd: packageRoot(), maxBuffer: 64 * 1024 * 1024 },
      );
  if (r.status !== 0) throw new Error(`image:check: the local reference run failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-5).join(' | ')}`);
  const db = new Database(join(out, 'rcb.sqlite'), { readonly: true });
  const rows = db.prepare('SELECT task_id, record FROM verdicts').all() as Array<{ task_id: string; record: string }>;
  db.close();
  return new Map(rows.map((row) => [row.task_id, judgement(JSON.parse(row.record) as Verdict)]));
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  preflight();
  mkdirSync(opts.dir, { recursive: true });
  const env = podmanEnv(opts.dir);
  const seccompPath = join(opts.dir, 'seccomp-no-userns.json');
  const podmanDefault = JSON.parse(readFileSync('/usr/share/containers/seccomp.json', 'utf8'));
  writeFileSync(seccompPath, JSON.stringify(userNamespaceRefusingProfile(podmanDefault), null, 1));

  const base = ensureBase(opts, env);
  const tBase = Date.now();
  say('synthesizing the stack');
  const synth = synthesize(opts.dir);
  if (opts.pythonLayer === 'pypi') await checkWheelhouse(opts.wheelhouse, synth);
  say(`podman build ${synth.context} (PYTHON_LAYER=${opts.pythonLayer}${opts.pythonLayer === 'pypi' ? `, wheelhouse ${opts.wheelhouse}` : ''})`);
  buildImage(synth, base, env, opts);
  const tBuilt = Date.now();
  const size = Number(run('podman', ['image', 'inspect', '--format', '{{.Size}}', IMAGE], env, { quiet: true }).trim());
  say(`image ${IMAGE}: ${(size / 1e6).toFixed(0)} MB (built in ${((tBuilt - tBase) / 1000).toFixed(1)}s)`);
  // The task's ephemeral storage holds the image twice (layers and filesystem) beside the scratch (docs/cloud.md "Shard storage").
  const tooSmall = imageFitsTask(size / 1e6, synth.ephemeralGiB);
  if (tooSmall) throw new Error(`image:check: ${tooSmall}`);
  say(`ephemeral storage: the shard task's ${synth.ephemeralGiB} GiB holds the image and the scratch`);

  const scratch = mkdtempSync(join(tmpdir(), 'rcb-image-check-'));
  chmodSync(scratch, 0o755);
  const aws = await startLocalAws({ scratchDir: join(scratch, 'aws') });
  try {
    const resolved = { RCB_TABLE: aws.storage.table, RCB_BUCKET: aws.storage.bucket, AWS_REGION: aws.storage.region };
    const runArgs = (extraEnv: Record<string, string>, command?: string[]) =>
      shardRunArgs({ image: IMAGE, container: synth.container, resolved, extraEnv, seccompProfilePath: seccompPath, command });

    // The constraints, as a process inside sees them.
    const probe = await runAsync('podman', runArgs({}, ['sh', '-c', PROBE]), env);
    const facts = Object.fromEntries(
      probe.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('=', 2) as [string, string]),
    );
    say(`inside: uid=${facts.uid} caps=${capabilityNames(facts.capeff ?? '0').join(',')} rootfs=${facts.rootfs} scratch=${facts.scratch}`);
    say(`inside: unshare --user: ${facts.unshare}; bwrap --unshare-user: ${facts.bwrap}; python=${facts.python}`);
    if (probe.code !== 0) throw new Error(`image:check: the probe container exited ${probe.code}: ${probe.stderr.trim()}`);

    // A run planned and answered as PlanRun and the generator would, on the local servers.
    const storage = createStorageAdapters(aws.storage, { doc: aws.doc, s3: aws.s3 });
    const pset = loadPset(opts.pset, opts.papers ? { papers: opts.papers } : {});
    const papers = pset.papers.map((p) => p.meta.id);
    const templatePath = resourcePath('prompt-template.txt');
    const template = loadTemplate(templatePath);
    const spec: RunSpec = {
      psetDigest: pset.digest,
      psetRoot: await uploadPsetBundle(storage.blobs, pset),
      models: [
        { id: 'oracle', params: {} },
        { id: 'empty', params: {} },
      ],
      samples: 1,
      withPaper: true,
      papers: opts.papers ? papers : null,
      promptTemplateDigest: template.digest,
      timeoutSec: 60,
      budgetUsd: null,
    };
    await uploadPromptTemplate(storage.blobs, readFileSync(templatePath, 'utf8'));
    const runId = computeRunId(spec);
    const queue = new KeptQueue();
    await planCloudRun({ ...storage, queue }, { runId, spec, models: { oracle: { config: {} }, empty: { config: {} } } });
    const ctx = await loadRunContext(storage, runId);
    const clients = new Map<string, ModelClient>([
      ['oracle', new OracleModel(ctx.pset)],
      ['empty', new EmptyModel()],
    ]);
    for (const { message } of queue.sent) await generateTask({ store: storage.store, clients }, ctx, message);
    say(`run ${runId}: ${queue.sent.length} tasks answered; evaluating ${papers.length} shard(s) in the image with RCB_SANDBOX=${opts.sandbox}`);

    const shardTimes: number[] = [];
    for (const paper of papers) {
      const started = Date.now();
      const r = await runAsync(
        'podman',
        runArgs({ ...aws.childEnv(), RCB_RUN_ID: runId, RCB_SHARD: paper, RCB_JOBS: String(opts.jobs), RCB_SANDBOX: opts.sandbox }),
        env,
      );
      shardTimes.push((Date.now() - started) / 1000);
      const last = r.stderr.trim().split('\n').slice(-2).join(' | ');
      say(`shard ${paper}: exit ${r.code} in ${shardTimes.at(-1)!.toFixed(1)}s: ${last}`);
      if (r.code !== 0) throw new Error(`image:check: shard ${paper} failed in the container (exit ${r.code})`);
    }

    const cloud = new Map((await storage.store.listVerdicts(runId)).map((v) => [v.taskId, judgement(v)]));
    say('local reference run (rcb run, same papers and models)');
    const planned = new Set(queue.sent.map((m) => m.message.taskId));
    const local = new Map([...localVerdicts(papers, opts.pset, scratch, opts.reference)].filter(([id]) => planned.has(id)));
    const differing = [...new Set([...cloud.keys(), ...local.keys()])].filter((id) => JSON.stringify(cloud.get(id)) !== JSON.stringify(local.get(id)));
    const passed = [...cloud.values()].filter((v) => v.strictPass).length;
    // Tasks judged on neither side: those of papers both runs found env_broken (kept out of the scores, as SPEC allows).
    const paperOf = new Map((await storage.store.listTasks(runId)).map((t) => [t.taskId, t.paper]));
    const unjudged = queue.sent.map((m) => m.message.taskId).filter((id) => !cloud.has(id) && !local.has(id));
    const brokenPapers = [...new Set(unjudged.map((id) => paperOf.get(id) ?? '?'))];
    const wall = (Date.now() - t0) / 1000;
    process.stdout.write(
      [
        `image: ${IMAGE}, ${(size / 1e6).toFixed(0)} MB; build ${((tBuilt - tBase) / 1000).toFixed(1)}s`,
        `container: uid ${facts.uid}, capabilities ${capabilityNames(facts.capeff ?? '0').join(' ')}, root ${facts.rootfs}, /scratch ${facts.scratch}, user namespaces: ${facts.unshare}`,
        `sandbox: RCB_SANDBOX=${opts.sandbox}; shards ${papers.length} (${shardTimes.map((s) => `${s.toFixed(1)}s`).join(', ')})`,
        `verdicts: ${cloud.size} in the container's run (${passed} strict passes), ${local.size} locally, ${differing.length} differing`,
        `env_broken in both runs: ${unjudged.length} task(s) of ${brokenPapers.length ? brokenPapers.join(', ') : 'no paper'}`,
        `wall time: ${wall.toFixed(1)}s`,
        '',
      ].join('\n'),
    );
    if (differing.length > 0 || cloud.size + unjudged.length !== queue.sent.length) {
      for (const id of differing.slice(0, 10))
        process.stderr.write(`  ${id}: container ${JSON.stringify(cloud.get(id))} local ${JSON.stringify(local.get(id))}\n`);
      return 1;
    }
    return 0;
  } finally {
    await aws.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** What the probe container prints, one `key=value` a line. */
const PROBE = [
  'echo uid=$(id -u)',
  "echo capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)",
  'if touch /probe 2>/dev/null; then echo rootfs=writable; else echo rootfs=read-only; fi',
  'if touch /scratch/probe 2>/dev/null; then echo scratch=writable; else echo scratch=not-writable; fi',
  'echo unshare=$(unshare --user true 2>&1 | head -1 || true)',
  'echo bwrap=$(bwrap --unshare-user --ro-bind / / true 2>&1 | head -1 || true)',
  "echo python=$RCB_PYTHON $($RCB_PYTHON -c \"import numpy, torch; print('numpy', numpy.__version__, 'torch', torch.__version__)\" 2>&1 | tail -1)",
].join('; ');

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
