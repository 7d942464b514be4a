import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { distributionOfFile, parseLock } from '../../../adapters/local/paper-env/lock';
import { isNetworkFailure as installIsNetworkFailure, pipFailure as installPipFailure } from '../../../adapters/local/paper-env/install';
import { REPO } from '../../helpers/cli';

const H1 = 'a'.repeat(64);
const H2 = 'b'.repeat(64);

describe("the papers' Python lock", () => {
  it('reads pins with their hashes across continuation lines, comments and via notes', () => {
    const lock = parseLock(
      `# header\nTorch==2.5.1 \\\n    --hash=sha256:${H1} \\\n    --hash=sha256:${H2}\n    # via -r requirements.in\ntyping_extensions==4.1 --hash=sha256:${H1}  # via x\n`,
    );
    expect(lock.entries.map((e) => [e.name, e.version, e.hashes.length, e.line])).toEqual([
      ['torch', '2.5.1', 2, 2],
      ['typing-extensions', '4.1', 1, 6],
    ]);
    expect(lock.entries[0]!.requirement).toBe(`Torch==2.5.1 --hash=sha256:${H1} --hash=sha256:${H2}`);
    expect(lock.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses an unhashed pin, a range, an index option and a package pinned twice, naming file and line', () => {
    expect(() => parseLock('numpy==1.26.4\n', 'l.txt')).toThrow('l.txt:1: numpy==1.26.4 has no --hash=sha256');
    expect(() => parseLock(`numpy>=1 --hash=sha256:${H1}\n`, 'l.txt')).toThrow('l.txt:1: not a pinned requirement');
    expect(() => parseLock(`\n--extra-index-url https://mirror.example.invalid/simple\n`, 'l.txt')).toThrow('l.txt:2: options are not allowed');
    expect(() => parseLock(`a==1 --hash=sha256:${H1}\nA==2 --hash=sha256:${H2}\n`, 'l.txt')).toThrow('l.txt:2: a is pinned twice');
    expect(() => parseLock('# nothing\n', 'l.txt')).toThrow('holds no requirement');
  });

  it('the shipped lock: every package pinned and hashed, torch and the packages the papers import, none of those left out', () => {
    const lock = parseLock(readFileSync(join(REPO, 'container', 'requirements.txt'), 'utf8'));
    const names = new Map(lock.entries.map((e) => [e.name, e.version]));
    expect(names.get('numpy')).toBe('1.26.4');
    expect(names.get('torch')).toBe('2.5.1');
    expect(names.get('timm')).toBe('0.9.12');
    for (const n of [
      'jax',
      'flax',
      'ml-collections',
      'hydra-core',
      'torchrl',
      'tensordict',
      'dm-meltingpot',
      'tensorflow-cpu',
      'mmcv-full',
      'mmgen',
      'diffusers',
      'pyarrow',
      'pandas',
      'openai-clip',
      'ipython',
    ]) {
      expect(names.has(n)).toBe(true);
    }
    for (const n of [
      'triton',
      'tensorflow',
      'keras',
      'tensorboard',
      'pygame',
      'pygame-ce',
      'opencv-python',
      'apex',
      'bitsandbytes',
      'torchsde',
      'gdown',
      'openai',
      'google-genai',
    ]) {
      expect(names.has(n)).toBe(false);
    }
  });

  it('names the distribution of wheel and sdist files', () => {
    expect(distributionOfFile('torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl')).toEqual({ name: 'torch', version: '2.5.1' });
    expect(distributionOfFile('mmcv-full-1.7.2.tar.gz')).toEqual({ name: 'mmcv-full', version: '1.7.2' });
    expect(distributionOfFile('dm_meltingpot-2.4.1.tar.gz')).toEqual({ name: 'dm-meltingpot', version: '2.4.1' });
    expect(distributionOfFile('batch.txt')).toBeNull();
  });

  it("tells an unreachable index from a wrong pin in pip's output", () => {
    const down =
      "WARNING: Retrying ... NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection>: Failed to establish a new connection: [Errno -2] Name or service not known')\nERROR: Could not find a version that satisfies the requirement torch==2.5.1 (from versions: none)";
    expect(installIsNetworkFailure(down)).toBe(true);
    expect(installIsNetworkFailure('ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.')).toBe(false);
    expect(installPipFailure(`Collecting a\n  Downloading a.whl\n${down}`)).toContain('Could not find a version');
    expect(installPipFailure(`Collecting a\n  Downloading a.whl\n${down}`)).not.toContain('Collecting');
  });
});
