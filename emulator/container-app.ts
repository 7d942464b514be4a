/**
 * The evaluation image's /app, laid out on this machine: the build context `cdk synth`
 * stages for the image asset, built by container/build-app.sh as the Dockerfile's
 * node-build stage builds it, then the runtime stage's `COPY --from=node-build /app/X Y`
 * lines replayed. The emulator starts each shard's container from there, so a file the
 * image lacks is missing here too, and nothing of the checkout (sources, tsx, its
 * node_modules) is reachable from it: the build stage's node_modules is a link to the
 * checkout's, as `npm ci` gives that stage its packages, and the runtime stage copies none.
 *
 * Layouts are cached by the image asset's hash (CDK's digest of the context's content):
 * a test run builds each distinct context once.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { packageRoot } from '../core/util/package-root';

/** One instruction of a Dockerfile, with the name of its stage (`runtime` for the last, unnamed one). */
export interface DockerInstruction {
  stage: string;
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions (continuation lines joined, comments dropped), each with its stage's name. */
export function dockerInstructions(text: string): DockerInstruction[] {
  const out: DockerInstruction[] = [];
  let stage = '';
  const logical = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
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

/** What the runtime stage copies from the build stage's /app: [path under /app, destination in the image]. */
export function runtimeCopies(instructions: DockerInstruction[]): Array<[string, string]> {
  return instructions
    .filter((i) => i.stage === 'runtime' && i.keyword === 'COPY')
    .map((i) => /^--from=node-build\s+\/app\/(\S+)\s+(\S+)$/.exec(i.args))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [m[1], m[2]]);
}

/** The image asset's build context as the cloud assembly stages it. */
export interface ImageContext {
  /** The staged folder (the repository minus CONTAINER_ASSET_EXCLUDES). */
  directory: string;
  /** The asset's hash: CDK's digest of the context's files and build options. */
  digest: string;
}

/** The one Docker image asset of a stack in a cloud assembly (its `<stack>.assets.json`). */
export function imageContextOf(assemblyDir: string, stackArtifactId: string): ImageContext {
  const manifest = JSON.parse(readFileSync(join(assemblyDir, `${stackArtifactId}.assets.json`), 'utf8')) as {
    dockerImages?: Record<string, { source: { directory?: string } }>;
  };
  const images = Object.entries(manifest.dockerImages ?? {});
  if (images.length !== 1 || !images[0][1].source.directory) {
    throw new Error(`emulator: expected one Docker image asset with a build context in ${stackArtifactId}.assets.json, found ${images.length}`);
  }
  const [digest, { source }] = images[0];
  return { directory: join(assemblyDir, source.directory!), digest };
}

/** Where layouts are kept: $XDG_CACHE_HOME/rcb/container-app, else ~/.cache/rcb/container-app. */
export function defaultLayoutCache(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'rcb', 'container-app');
}

export interface ContainerApp {
  /** The image's /app: the container's working directory. */
  appDir: string;
  /** The command of the image (its CMD) with paths under appDir. */
  command: string[];
  /** Whether this call built it (false: found in the cache). */
  built: boolean;
}

/** The image's CMD, `["node", ...args]`, from the Dockerfile's last CMD line (exec form). */
function imageCommand(instructions: DockerInstruction[]): string[] {
  const cmd = instructions.filter((i) => i.stage === 'runtime' && i.keyword === 'CMD').at(-1);
  const parsed = cmd ? (JSON.parse(cmd.args) as unknown) : undefined;
  if (!Array.isArray(parsed) || parsed[0] !== 'node') throw new Error('emulator: the Dockerfile\'s runtime CMD must be ["node", ...] in exec form');
  return parsed.slice(1) as string[];
}

/**
 * The /app of the image built from `context`, from the cache or built now. The build runs
 * `sh container/build-app.sh` in a copy of the context, as the Dockerfile's RUN does.
 */
export function containerApp(context: ImageContext, cacheRoot: string = defaultLayoutCache()): ContainerApp {
  const instructions = dockerInstructions(readFileSync(join(context.directory, 'container', 'Dockerfile'), 'utf8'));
  const args = imageCommand(instructions);
  const final = join(cacheRoot, context.digest);
  const appDir = join(final, 'app');
  const result = (built: boolean): ContainerApp => ({ appDir, command: args.map((a) => (a.startsWith('-') ? a : join(appDir, a))), built });
  if (existsSync(join(final, 'complete'))) return result(false);

  mkdirSync(cacheRoot, { recursive: true });
  const work = mkdtempSync(join(cacheRoot, '.build-'));
  try {
    const build = join(work, 'build');
    cpSync(context.directory, build, { recursive: true });
    // What `npm ci` gives the node-build stage: the packages of the lockfile (dev ones too).
    symlinkSync(join(packageRoot(), 'node_modules'), join(build, 'node_modules'), 'dir');
    const r = spawnSync('sh', ['container/build-app.sh'], { cwd: build, encoding: 'utf8', timeout: 300_000 });
    if (r.status !== 0)
      throw new Error(`emulator: container/build-app.sh failed (${r.signal ?? `exit ${r.status}`}): ${(r.stdout + r.stderr).trim().slice(-2000)}`);
    const image = join(work, 'image');
    for (const [from, to] of runtimeCopies(instructions)) {
      if (from === 'node_modules' || from.startsWith('node_modules/')) {
        throw new Error("emulator: the runtime stage copies node_modules; the layout would reach the checkout's packages");
      }
      const source = join(build, from);
      if (!existsSync(source)) throw new Error(`emulator: the Dockerfile copies /app/${from}, which container/build-app.sh did not make`);
      const target = join(image, to);
      mkdirSync(dirname(target), { recursive: true });
      cpSync(source, target, { recursive: true, dereference: true });
    }
    writeFileSync(join(work, 'complete'), `${context.digest}\n`);
    rmSync(build, { recursive: true, force: true });
    renameSync(join(image, 'app'), join(work, 'app'));
    rmSync(image, { recursive: true, force: true });
    try {
      renameSync(work, final);
    } catch (err) {
      // Another process built the same digest first: theirs is as good.
      if (!existsSync(join(final, 'complete'))) throw err;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return result(true);
}
