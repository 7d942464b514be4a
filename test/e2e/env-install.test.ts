/**
 * `rcb env install --offline` and `rcb env path` as a user runs them, on a tiny hashed lock
 * and a local wheelhouse (no index, no network): the virtualenv is made from Python 3.11,
 * the locked wheels installed, the marker written; a second install returns at once; a
 * changed lock brings the environment to exactly that lock (a package it no longer holds is
 * removed); a wheelhouse that lacks a locked file is named in the error.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rcb, tempDir } from '../helpers/cli';

const BASE_PYTHON = existsSync('/usr/bin/python3.11') ? '/usr/bin/python3.11' : 'python3.11';

/** A pure-Python wheel `name-version-py3-none-any.whl` with one module `name` whose VERSION is `version`, written with Python's zipfile. */
function makeWheel(dir: string, name: string, version: string): string {
  const file = join(dir, `${name}-${version}-py3-none-any.whl`);
  const script = `
import sys, zipfile, hashlib, base64
path, name, version = sys.argv[1:4]
di = f"{name}-{version}.dist-info"
files = {
  f"{name}/__init__.py": f"VERSION = {version!r}\\n",
  f"{di}/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
  f"{di}/WHEEL": "Wheel-Version: 1.0\\nGenerator: rcb-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(data):
  return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data.encode()).digest()).rstrip(b"=").decode()
record = "".join(f"{p},{digest(c)},{len(c.encode())}\\n" for p, c in files.items()) + f"{di}/RECORD,,\\n"
with zipfile.ZipFile(path, "w") as z:
  for p, c in files.items():
    z.writestr(zipfile.ZipInfo(p, (2020, 1, 1, 0, 0, 0)), c)
  z.writestr(zipfile.ZipInfo(f"{di}/RECORD", (2020, 1, 1, 0, 0, 0)), record)
`;
  execFileSync(BASE_PYTHON, ['-c', script, file, name, version]);
  return file;
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('rcb env install --offline on a tiny lock', () => {
  const root = tempDir('rcb-env-e2e-');
  // As root, rcb refuses an environment under a folder the sandbox's uids cannot enter.
  chmodSync(root, 0o755);
  const wheelhouse = join(root, 'wheelhouse');
  const dir = join(root, 'env');
  mkdirSync(wheelhouse, { recursive: true });
  const a = makeWheel(wheelhouse, 'rcbtiny_a', '1.0');
  const b = makeWheel(wheelhouse, 'rcbtiny_b', '2.0');
  const lockBoth = join(root, 'both.txt');
  const lockA = join(root, 'a.txt');
  writeFileSync(lockBoth, `rcbtiny-a==1.0 \\\n    --hash=sha256:${sha256(a)}\nrcbtiny-b==2.0 \\\n    --hash=sha256:${sha256(b)}\n`);
  writeFileSync(lockA, `rcbtiny-a==1.0 \\\n    --hash=sha256:${sha256(a)}\n`);
  const install = (lock: string, extra: string[] = []) =>
    rcb(['env', 'install', '--dir', dir, '--wheelhouse', wheelhouse, '--lock', lock, '--base-python', BASE_PYTHON, '--offline', ...extra], {
      timeoutMs: 300_000,
    });
  const imports = (python: string, code: string) => execFileSync(python, ['-c', code], { encoding: 'utf8' }).trim();

  it('installs the lock, prints the interpreter, and env path prints it again', () => {
    const r = install(lockBoth);

    expect(r.stderr).toContain('2 locked packages; 2 already in');
    expect(r.status).toBe(0);
    const python = r.stdout.trim();
    expect(python).toBe(join(dir, 'bin', 'python'));
    expect(imports(python, 'import rcbtiny_a, rcbtiny_b; print(rcbtiny_a.VERSION, rcbtiny_b.VERSION)')).toBe('1.0 2.0');
    const marker = JSON.parse(readFileSync(join(dir, 'rcb-env.json'), 'utf8'));
    expect(marker).toMatchObject({ packages: 2, lockDigest: createHash('sha256').update(readFileSync(lockBoth)).digest('hex') });
    expect(rcb(['env', 'path', '--dir', dir]).stdout.trim()).toBe(python);
  }, 300_000);

  it('returns at once the second time, and brings the environment to exactly a changed lock', () => {
    const again = install(lockBoth);
    expect(again.status).toBe(0);
    expect(again.stderr).toContain('already holds the lock');

    const r = install(lockA);

    expect(r.status).toBe(0);
    expect(r.stderr).toContain('removing 1 package(s) not in the lock: rcbtiny-b');
    expect(imports(r.stdout.trim(), 'import importlib.util as u; print(u.find_spec("rcbtiny_a") is not None, u.find_spec("rcbtiny_b") is not None)')).toBe(
      'True False',
    );
  }, 300_000);

  it('--torch-index takes torch as <version>+cpu from that index and leaves the CUDA libraries out', () => {
    // A lock with a "torch" and an nvidia-* package, and a PEP 503 index in a folder with the +cpu build.
    const cudaTorch = makeWheel(wheelhouse, 'torch', '1.0');
    const nvidia = makeWheel(wheelhouse, 'nvidia_fake_cu12', '1.0');
    const lockTorch = join(root, 'torch.txt');
    writeFileSync(lockTorch, `nvidia-fake-cu12==1.0 --hash=sha256:${sha256(nvidia)}\ntorch==1.0 --hash=sha256:${sha256(cudaTorch)}\n`);
    const index = join(root, 'index');
    mkdirSync(join(index, 'torch'), { recursive: true });
    const cpu = makeWheel(join(index, 'torch'), 'torch', '1.0+cpu');
    const cpuName = 'torch-1.0+cpu-py3-none-any.whl';
    writeFileSync(join(index, 'torch', 'index.html'), `<html><body><a href="${encodeURIComponent(cpuName)}">${cpuName}</a></body></html>\n`);
    const torchDir = join(root, 'env-cpu');
    const args = ['env', 'install', '--dir', torchDir, '--wheelhouse', wheelhouse, '--lock', lockTorch, '--base-python', BASE_PYTHON];

    const r = rcb([...args, '--torch-index', `file://${index}`], { timeoutMs: 300_000 });

    expect(r.stderr).toContain(`downloading torch==1.0+cpu from file://${index}`);
    expect(r.status).toBe(0);
    expect(imports(r.stdout.trim(), 'import torch, importlib.util as u; print(torch.VERSION, u.find_spec("nvidia_fake_cu12") is not None)')).toBe(
      '1.0+cpu False',
    );
    const marker = JSON.parse(readFileSync(join(torchDir, 'rcb-env.json'), 'utf8'));
    expect(marker.torchIndex).toBe(`file://${index}`);
    expect(marker.torchFiles).toEqual({ [cpuName]: sha256(cpu) });
    // Without the switch, the same lock gives the lock's build back, and the nvidia package.
    const back = rcb([...args, '--offline'], { timeoutMs: 300_000 });
    expect(back.status).toBe(0);
    expect(imports(back.stdout.trim(), 'import torch, nvidia_fake_cu12; print(torch.VERSION)')).toBe('1.0');
  }, 300_000);

  it('names the locked files an offline wheelhouse lacks, and env path says when nothing is installed', () => {
    const missing = join(root, 'missing.txt');
    writeFileSync(missing, `rcbtiny-c==3.0 \\\n    --hash=sha256:${'0'.repeat(64)}\n`);

    const r = install(missing);

    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('lacks 1 locked file(s): rcbtiny-c==3.0');
    const none = rcb(['env', 'path', '--dir', join(root, 'nothing')]);
    expect(none.status).not.toBe(0);
    expect(none.stderr).toContain(`no environment is installed at ${join(root, 'nothing')}`);
  }, 300_000);
});
