/**
 * `rcb env install`: the papers' locked Python environment, built with pip from the lock's
 * files only (`--require-hashes --no-deps`), in steps that each can be rerun:
 *   1. a virtualenv from a Python 3.11 base interpreter (skipped when it exists);
 *   2. every locked file fetched into the wheelhouse, in batches, with pip's own client
 *      settings (its configured index, CA and proxy); a file already there whose sha256 is
 *      locked is not fetched again, so an interrupted install resumes where it stopped;
 *   3. source distributions built into wheels (wheelhouse/built/<sha256>/), once: some with
 *      a recipe from requirements-build.json (mmcv-full's CPU ops, meltingpot's assets);
 *   4. the wheels installed offline from the wheelhouse, and anything not in the lock
 *      removed, so the environment holds the lock and nothing else;
 *   5. a marker (rcb-env.json) with the lock's digest: a second install with the same lock
 *      checks the marker and the interpreter and returns at once.
 * `offline` skips step 2's downloads (the image build: the host filled the wheelhouse).
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync, type WriteStream } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { distributionOfFile, isSdist, normalizeName, type Lock, type LockEntry } from './lock';
import { ENV_MARKER, envPython, readEnvMarker, type EnvMarker } from './location';
import { fileSha256 } from '../../file-sha256';

/** How one source distribution is built (container/requirements-build.json). */
export interface BuildRecipe {
  /** Build against the environment's own packages (its setup.py imports torch). */
  noBuildIsolation?: boolean;
  /** Environment of the build (e.g. MMCV_WITH_OPS=1 FORCE_CUDA=0 for mmcv's CPU ops). */
  env?: Record<string, string>;
  /**
   * A tarball put in the build's TMPDIR under this name, holding one folder `dir` with a
   * NOT_INCLUDED note: for a setup.py that would download data from outside the index and
   * takes a copy it finds there instead (meltingpot's game assets).
   */
  placeholderTar?: { file: string; dir: string; note: string };
  why: string;
}

export type BuildRecipes = Record<string, BuildRecipe>;

export interface InstallOptions {
  dir: string;
  wheelhouse: string;
  lock: Lock;
  lockFile: string;
  recipes: BuildRecipes;
  /** Python 3.11 interpreter the virtualenv is made from. */
  basePython: string;
  /** No downloads: every locked file must already be in the wheelhouse. */
  offline?: boolean;
  /**
   * The switch to PyTorch's CPU-only wheels, for a machine that reaches their index: torch,
   * torchvision and torchaudio (those the lock holds) as `<locked version>+cpu` from this
   * index, and the lock's CUDA libraries (nvidia-*, triton) left out. Those wheels are not in
   * the lock, so their sha256 is recorded in the marker instead of checked against it.
   */
  torchIndex?: string;
  /** Requirements per pip download (default 8). */
  batchSize?: number;
  progress: (line: string) => void;
}

export class EnvInstallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvInstallError';
  }
}

interface RunResult {
  code: number;
  output: string;
}

/** Runs a command, its output appended to the install log; resolves with the exit code and the output's tail. */
function run(cmd: string, args: string[], log: WriteStream, env: NodeJS.ProcessEnv = process.env): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    log.write(`\n$ ${cmd} ${args.join(' ')}\n`);
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const take = (chunk: Buffer) => {
      log.write(chunk);
      tail = (tail + chunk.toString('utf8')).slice(-20000);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('close', (code, signal) => resolvePromise({ code: code ?? (signal ? 128 : 1), output: tail }));
  });
}

const hashCache = new Map<string, string>();

async function sha256File(path: string): Promise<string> {
  const st = statSync(path);
  const key = `${path}:${st.size}:${st.mtimeMs}`;
  const known = hashCache.get(key);
  if (known) return known;
  const digest = await fileSha256(path);
  hashCache.set(key, digest);
  return digest;
}

/** The wheelhouse's file for each entry, if one whose sha256 is locked is there. */
export async function filesInWheelhouse(wheelhouse: string, entries: LockEntry[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (!existsSync(wheelhouse)) return found;
  const byName = new Map(entries.map((e) => [`${e.name}@${e.version}`, e]));
  for (const file of readdirSync(wheelhouse)) {
    const dist = distributionOfFile(file);
    if (!dist) continue;
    const entry = byName.get(`${dist.name}@${dist.version}`);
    if (!entry || found.has(entry.name)) continue;
    if (entry.hashes.includes(await sha256File(join(wheelhouse, file)))) found.set(entry.name, file);
  }
  return found;
}

/** The lines of pip's output that say why it failed, without its progress noise. */
export function pipFailure(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trimEnd())
    .filter(Boolean);
  const errors = lines.filter((l) => /^(ERROR|error):|Error\b|[Ee]rrno|Could not|No matching|unreachable|timed out|HTTPS?Connection|SSL/.test(l.trim()));
  return (errors.length ? errors : lines).slice(-6).join('\n');
}

/** True when pip's failure is the index not answering (DNS, refused, timeout, TLS), not a wrong pin. */
export function isNetworkFailure(output: string): boolean {
  return /NewConnectionError|Name or service not known|Temporary failure in name resolution|Connection refused|Max retries exceeded|timed out|Network is unreachable|SSLError|ProxyError|No route to host/.test(
    output,
  );
}

function pipArgs(dir: string): { python: string; pip: string[] } {
  return { python: envPython(dir), pip: ['-m', 'pip', '--disable-pip-version-check', '--no-input'] };
}

async function checkBase(basePython: string, log: WriteStream): Promise<void> {
  const r = await run(basePython, ['-c', 'import sys, venv; print("%d.%d" % sys.version_info[:2])'], log).catch((e: Error) => ({ code: 1, output: e.message }));
  if (r.code !== 0)
    throw new EnvInstallError(
      `cannot run the base interpreter ${basePython} with its venv module: ${pipFailure(r.output)} (Debian: apt-get install python3.11-venv; or pass --base-python)`,
    );
  const version = r.output.trim().split('\n').pop();
  if (version !== '3.11') throw new EnvInstallError(`the lock is for Python 3.11; ${basePython} is ${version} (pass --base-python PATH to a 3.11 interpreter)`);
}

async function ensureVenv(opts: InstallOptions, log: WriteStream): Promise<void> {
  if (existsSync(envPython(opts.dir))) return;
  if (existsSync(opts.dir) && readdirSync(opts.dir).length && !existsSync(join(opts.dir, 'pyvenv.cfg'))) {
    throw new EnvInstallError(`${opts.dir} exists and is not a virtualenv: remove it or pass another --dir`);
  }
  await checkBase(opts.basePython, log);
  opts.progress(`creating the virtualenv ${opts.dir} from ${opts.basePython}`);
  mkdirSync(dirname(opts.dir), { recursive: true });
  const r = await run(opts.basePython, ['-m', 'venv', opts.dir], log);
  if (r.code !== 0) throw new EnvInstallError(`python -m venv ${opts.dir} failed: ${pipFailure(r.output)}`);
}

/** Fetches the entries with pip download into the wheelhouse, a batch at a time. */
async function download(opts: InstallOptions, entries: LockEntry[], log: WriteStream, extra: string[] = []): Promise<void> {
  const { python, pip } = pipArgs(opts.dir);
  const size = opts.batchSize ?? 8;
  const tmp = join(opts.wheelhouse, '.partial');
  mkdirSync(tmp, { recursive: true });
  for (let i = 0; i < entries.length; i += size) {
    const batch = entries.slice(i, i + size);
    opts.progress(`downloading [${Math.min(i + size, entries.length)}/${entries.length}] ${batch.map((e) => `${e.name}==${e.version}`).join(' ')}`);
    const reqFile = join(tmp, 'batch.txt');
    writeFileSync(reqFile, `${batch.map((e) => e.requirement).join('\n')}\n`);
    const r = await run(
      python,
      [...pip, 'download', '--no-deps', '--require-hashes', '--progress-bar', 'off', ...extra, '-d', opts.wheelhouse, '-r', reqFile],
      log,
    );
    if (r.code !== 0) {
      const names = batch.map((e) => `${e.name}==${e.version}`).join(', ');
      if (isNetworkFailure(r.output)) {
        throw new EnvInstallError(
          `the Python package index did not answer while downloading ${names} (pip's configured index; see \`pip config list\`):\n${pipFailure(r.output)}\n` +
            `what is already in ${opts.wheelhouse} stays; rerun \`rcb env install\` to resume`,
        );
      }
      throw new EnvInstallError(`pip download failed for ${names} (lock ${opts.lockFile}):\n${pipFailure(r.output)}`);
    }
  }
}

function builtDir(wheelhouse: string, sdistSha: string): string {
  return join(wheelhouse, 'built', sdistSha.slice(0, 16));
}

function builtWheel(wheelhouse: string, sdistSha: string): string | null {
  const dir = builtDir(wheelhouse, sdistSha);
  if (!existsSync(dir)) return null;
  const wheel = readdirSync(dir).find((f) => f.endsWith('.whl'));
  return wheel ? join(dir, wheel) : null;
}

/** Builds one locked sdist into wheelhouse/built/<its sha256>/, with its recipe. */
async function buildSdist(opts: InstallOptions, entry: LockEntry, sdist: string, log: WriteStream): Promise<string> {
  const sha = await sha256File(join(opts.wheelhouse, sdist));
  const done = builtWheel(opts.wheelhouse, sha);
  if (done) return done;
  const recipe = opts.recipes[entry.name];
  opts.progress(`building ${sdist}${recipe ? ` (${recipe.why})` : ''}`);
  const out = builtDir(opts.wheelhouse, sha);
  const work = `${out}.tmp`;
  mkdirSync(work, { recursive: true });
  const env: NodeJS.ProcessEnv = { ...process.env, ...(recipe?.env ?? {}) };
  if (recipe?.placeholderTar) {
    const { file, dir, note } = recipe.placeholderTar;
    const stage = join(work, 'placeholder');
    mkdirSync(join(stage, dir), { recursive: true });
    writeFileSync(join(stage, dir, 'NOT_INCLUDED'), `${note}\n`);
    const tar = await run('tar', ['-czf', join(work, file), '-C', stage, dir], log);
    if (tar.code !== 0) throw new EnvInstallError(`cannot write ${file} for ${sdist}: ${pipFailure(tar.output)}`);
    env.TMPDIR = work;
  }
  const { python, pip } = pipArgs(opts.dir);
  const r = await run(
    python,
    [
      ...pip,
      'wheel',
      '--no-deps',
      '--no-index',
      // PEP 517 even for a setup.py-only sdist: an older pip (Debian's 23.0 in a fresh venv)
      // would run `setup.py bdist_wheel` in the venv itself, which has no `wheel` yet.
      '--use-pep517',
      '--find-links',
      opts.wheelhouse,
      ...(recipe?.noBuildIsolation ? ['--no-build-isolation'] : []),
      '-w',
      work,
      `${entry.name}==${entry.version}`,
    ],
    log,
    env,
  );
  const wheel = readdirSync(work).find((f) => f.endsWith('.whl'));
  if (r.code !== 0 || !wheel) throw new EnvInstallError(`building ${sdist} failed (log: ${logPath(opts)}):\n${pipFailure(r.output)}`);
  mkdirSync(out, { recursive: true });
  renameSync(join(work, wheel), join(out, wheel));
  return join(out, wheel);
}

function logPath(opts: InstallOptions): string {
  return `${opts.dir}.install.log`;
}

export interface InstallResult {
  python: string;
  upToDate: boolean;
  packages: number;
  log: string;
}

/** The packages --torch-index takes from PyTorch's CPU-only index instead of the lock. */
const CPU_TORCH = ['torch', 'torchvision', 'torchaudio'];

/** The lock's packages only the CUDA build of torch needs. */
function isCudaOnly(name: string): boolean {
  return name.startsWith('nvidia-') || name === 'triton';
}

/**
 * The CPU-only wheels (`torch-2.5.1+cpu-...whl`), fetched from --torch-index when absent, in
 * their own folder wheelhouse/torch-cpu/: in the wheelhouse itself pip would pick 2.5.1+cpu
 * for the lock's ==2.5.1 once the switch is off again.
 */
export function cpuTorchDir(wheelhouse: string): string {
  return join(wheelhouse, 'torch-cpu');
}

async function ensureCpuTorch(opts: InstallOptions, cpu: LockEntry[], log: WriteStream): Promise<{ file: string; sha256: string }[]> {
  const dir = cpuTorchDir(opts.wheelhouse);
  const find = () =>
    cpu.map((e) =>
      (existsSync(dir) ? readdirSync(dir) : []).find(
        (f) => f.endsWith('.whl') && distributionOfFile(f)?.name === e.name && distributionOfFile(f)?.version === `${e.version}+cpu`,
      ),
    );
  let files = find();
  const missing = cpu.filter((_, i) => !files[i]).map((e) => `${e.name}==${e.version}+cpu`);
  if (missing.length) {
    if (opts.offline) throw new EnvInstallError(`offline, and the wheelhouse ${opts.wheelhouse} lacks the CPU-only ${missing.join(', ')} (--torch-index)`);
    opts.progress(`downloading ${missing.join(' ')} from ${opts.torchIndex}`);
    mkdirSync(dir, { recursive: true });
    const { python, pip } = pipArgs(opts.dir);
    const r = await run(python, [...pip, 'download', '--no-deps', '--progress-bar', 'off', '--index-url', opts.torchIndex!, '-d', dir, ...missing], log);
    if (r.code !== 0) {
      const what = isNetworkFailure(r.output)
        ? `the index ${opts.torchIndex} (--torch-index) did not answer`
        : `pip download from ${opts.torchIndex} (--torch-index) failed`;
      throw new EnvInstallError(`${what} for ${missing.join(', ')}:\n${pipFailure(r.output)}`);
    }
    files = find();
  }
  const out: { file: string; sha256: string }[] = [];
  for (const [i, file] of files.entries()) {
    if (!file) throw new EnvInstallError(`${opts.torchIndex} (--torch-index) gave no wheel ${cpu[i]!.name}==${cpu[i]!.version}+cpu for this Python`);
    out.push({ file, sha256: await sha256File(join(dir, file)) });
  }
  return out;
}

/** What a finished environment must import: numpy and torch, those of them the lock holds. */
function probeModules(lock: Lock): string[] {
  return ['numpy', 'torch'].filter((m) => lock.entries.some((e) => e.name === m));
}

function probeCode(lock: Lock): string {
  const modules = probeModules(lock);
  return modules.length ? `import ${modules.join(', ')}` : 'import sys';
}

/** Installs (or checks) the environment; throws EnvInstallError with what failed. */
export async function installEnv(opts: InstallOptions): Promise<InstallResult> {
  opts = { ...opts, dir: resolve(opts.dir), wheelhouse: resolve(opts.wheelhouse) };
  const python = envPython(opts.dir);
  const marker = readEnvMarker(opts.dir);
  mkdirSync(dirname(opts.dir), { recursive: true });
  const log = createWriteStream(logPath(opts), { flags: 'a' });
  try {
    if (marker?.lockDigest === opts.lock.digest && marker.torchIndex === opts.torchIndex && existsSync(python)) {
      const probe = await run(python, ['-c', probeCode(opts.lock)], log);
      if (probe.code === 0) return { python, upToDate: true, packages: marker.packages, log: logPath(opts) };
      opts.progress(`the environment at ${opts.dir} does not import ${probeModules(opts.lock).join(' and ') || 'its packages'}; repairing it`);
    }
    await ensureVenv(opts, log);
    mkdirSync(opts.wheelhouse, { recursive: true });

    const cpuTorch = opts.torchIndex ? opts.lock.entries.filter((e) => CPU_TORCH.includes(e.name)) : [];
    const entries = opts.torchIndex ? opts.lock.entries.filter((e) => !cpuTorch.includes(e) && !isCudaOnly(e.name)) : opts.lock.entries;
    const cpuFiles = cpuTorch.length ? await ensureCpuTorch(opts, cpuTorch, log) : [];
    if (marker?.torchIndex && !opts.torchIndex && existsSync(python)) {
      // pip takes an installed 2.5.1+cpu for ==2.5.1: the CPU builds go before the lock's come back.
      const names = opts.lock.entries.filter((e) => CPU_TORCH.includes(e.name)).map((e) => e.name);
      opts.progress(`removing the CPU-only ${names.join(' ')} of --torch-index ${marker.torchIndex}`);
      const r = await run(python, [...pipArgs(opts.dir).pip, 'uninstall', '-y', ...names], log);
      if (r.code !== 0) throw new EnvInstallError(`pip uninstall of the CPU-only torch failed: ${pipFailure(r.output)}`);
    }
    const needsEnv = (e: LockEntry) => opts.recipes[e.name]?.noBuildIsolation === true;
    // Files whose metadata needs the installed environment (a setup.py importing torch) are
    // fetched after the first install.
    let have = await filesInWheelhouse(opts.wheelhouse, entries);
    const first = entries.filter((e) => !needsEnv(e));
    const missingFirst = first.filter((e) => !have.has(e.name));
    if (missingFirst.length && opts.offline) {
      throw new EnvInstallError(
        `offline, and the wheelhouse ${opts.wheelhouse} lacks ${missingFirst.length} locked file(s): ${missingFirst.map((e) => `${e.name}==${e.version}`).join(', ')}`,
      );
    }
    opts.progress(`${entries.length} locked packages; ${entries.length - missingFirst.length} already in ${opts.wheelhouse}`);
    if (missingFirst.length) await download(opts, missingFirst, log);
    have = await filesInWheelhouse(opts.wheelhouse, entries);

    const { pip } = pipArgs(opts.dir);
    const installWheels = async (group: LockEntry[], label: string) => {
      const wheels = group.filter((e) => !isSdist(have.get(e.name)!));
      const built: string[] = [];
      for (const e of group.filter((x) => isSdist(have.get(x.name)!))) built.push(await buildSdist(opts, e, have.get(e.name)!, log));
      opts.progress(`installing ${wheels.length + built.length} package(s) (${label})`);
      if (wheels.length) {
        const reqFile = join(opts.wheelhouse, '.partial', 'install.txt');
        mkdirSync(dirname(reqFile), { recursive: true });
        writeFileSync(reqFile, `${wheels.map((e) => e.requirement).join('\n')}\n`);
        const r = await run(
          python,
          [...pip, 'install', '--no-index', '--find-links', opts.wheelhouse, '--no-deps', '--require-hashes', '--progress-bar', 'off', '-r', reqFile],
          log,
        );
        if (r.code !== 0) throw new EnvInstallError(`pip install from ${opts.wheelhouse} failed (log: ${logPath(opts)}):\n${pipFailure(r.output)}`);
      }
      if (built.length) {
        const r = await run(python, [...pip, 'install', '--no-index', '--no-deps', '--progress-bar', 'off', ...built], log);
        if (r.code !== 0) throw new EnvInstallError(`pip install of the built wheels failed (log: ${logPath(opts)}):\n${pipFailure(r.output)}`);
      }
    };
    if (cpuFiles.length) {
      opts.progress(`installing ${cpuFiles.map((f) => f.file).join(' ')} (CPU-only, from ${opts.torchIndex})`);
      const r = await run(
        python,
        [...pip, 'install', '--no-index', '--no-deps', '--progress-bar', 'off', ...cpuFiles.map((f) => join(cpuTorchDir(opts.wheelhouse), f.file))],
        log,
      );
      if (r.code !== 0) throw new EnvInstallError(`pip install of the CPU-only torch wheels failed (log: ${logPath(opts)}):\n${pipFailure(r.output)}`);
    }
    await installWheels(first, 'wheels and plain source builds');

    const second = entries.filter(needsEnv);
    if (second.length) {
      const missing = second.filter((e) => !have.has(e.name));
      if (missing.length && opts.offline)
        throw new EnvInstallError(`offline, and the wheelhouse lacks ${missing.map((e) => `${e.name}==${e.version}`).join(', ')}`);
      if (missing.length) await download(opts, missing, log, ['--no-build-isolation']);
      have = await filesInWheelhouse(opts.wheelhouse, entries);
      await installWheels(second, 'built against the environment');
    }

    // Exactly the lock: what an earlier lock or a hand install left is removed.
    const listed = await run(python, [...pip, 'list', '--format=json'], log);
    const locked = new Set(entries.map((e) => e.name).concat('pip', ...cpuTorch.map((e) => e.name)));
    const installed = (JSON.parse(listed.output.trim().split('\n').pop() ?? '[]') as { name: string }[]).map((p) => normalizeName(p.name));
    const extra = installed.filter((n) => !locked.has(n));
    if (extra.length) {
      opts.progress(`removing ${extra.length} package(s) not in the lock: ${extra.join(' ')}`);
      const r = await run(python, [...pip, 'uninstall', '-y', ...extra], log);
      if (r.code !== 0) throw new EnvInstallError(`pip uninstall failed: ${pipFailure(r.output)}`);
    }
    const missing = entries.filter((e) => !installed.includes(e.name));
    if (missing.length) throw new EnvInstallError(`after the install, pip does not list ${missing.map((e) => e.name).join(', ')}`);

    const probe = await run(python, ['-c', probeCode(opts.lock)], log);
    if (probe.code !== 0)
      throw new EnvInstallError(`the installed environment does not import ${probeModules(opts.lock).join(' and ')}:\n${pipFailure(probe.output)}`);
    const done: EnvMarker = {
      lockDigest: opts.lock.digest,
      packages: entries.length + cpuTorch.length,
      python,
      installedAt: new Date().toISOString(),
      ...(opts.torchIndex ? { torchIndex: opts.torchIndex, torchFiles: Object.fromEntries(cpuFiles.map((f) => [f.file, f.sha256])) } : {}),
    };
    writeFileSync(join(opts.dir, ENV_MARKER), `${JSON.stringify(done, null, 2)}\n`);
    return { python, upToDate: false, packages: entries.length, log: logPath(opts) };
  } finally {
    log.end();
  }
}

export function readRecipes(file: string): BuildRecipes {
  if (!existsSync(file)) return {};
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, BuildRecipe>;
  return Object.fromEntries(
    Object.entries(raw)
      .filter(([k]) => !k.startsWith('$'))
      .map(([k, v]) => [normalizeName(k), v]),
  );
}
