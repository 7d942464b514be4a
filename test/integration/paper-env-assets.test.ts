/**
 * The papers' test-time assets (adapters/local/paper-env/assets.ts), offline: a local HTTP
 * server stands in for the assets' host. A file is fetched into the environment's assets/
 * folder and kept by a second install; a wrong sha256, an unreachable host and --offline each
 * leave the file out with the reason named; `urlFrom` takes the address from the environment's
 * own packages (as REPA-E's VGG16 address comes from torchvision); and the repository's
 * container/requirements-assets.json parses, with doctor's notes applying as documented.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { assetFile, explainGap, fetchAssets, readEnvNotes, type PaperAsset } from '../../adapters/local/paper-env/assets';
import { packageRoot } from '../../core/util/package-root';
import { tempDir } from '../helpers/cli';

const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const WEIGHTS = Buffer.from('tiny checkpoint bytes\n'.repeat(1000));
const SHA = createHash('sha256').update(WEIGHTS).digest('hex');

let server: Server;
let base: string;
let requests = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    if (req.url === '/models/tiny.pth') {
      res.writeHead(200, { 'content-length': String(WEIGHTS.length) });
      res.end(WEIGHTS);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

const asset = (over: Partial<PaperAsset> = {}): PaperAsset => ({
  paper: 'tiny-paper',
  path: 'torch/hub/checkpoints/tiny-0123abcd.pth',
  url: `${base}/models/tiny.pth`,
  sha256Prefix: SHA.slice(0, 8),
  what: 'a tiny checkpoint',
  ...over,
});

describe('fetchAssets', () => {
  it('fetches an asset into assets/, and a second install fetches nothing', async () => {
    const envDir = tempDir('rcb-assets-');
    const lines: string[] = [];
    const first = await fetchAssets({ envDir, python: PYTHON, assets: [asset()], progress: (l) => void lines.push(l) });

    expect(first.map((r) => r.state)).toEqual(['fetched']);
    expect(readFileSync(assetFile(envDir, asset())).equals(WEIGHTS)).toBe(true);
    expect(lines.join('\n')).toContain("fetching tiny-paper's tiny-0123abcd.pth");

    const before = requests;
    const second = await fetchAssets({ envDir, python: PYTHON, assets: [asset()], progress: () => undefined });
    expect(second.map((r) => r.state)).toEqual(['present']);
    expect(requests).toBe(before);
  });

  it('leaves out a file whose sha256 is not the expected one, and names both digests', async () => {
    const envDir = tempDir('rcb-assets-');
    const lines: string[] = [];
    const [r] = await fetchAssets({ envDir, python: PYTHON, assets: [asset({ sha256Prefix: 'deadbeef' })], progress: (l) => void lines.push(l) });

    expect(r!.state).toBe('missing');
    expect(r!.why).toContain(`sha256 ${SHA} does not start with the expected deadbeef`);
    expect(existsSync(r!.file)).toBe(false);
    expect(existsSync(`${r!.file}.part`)).toBe(false);
    expect(lines.join('\n')).toMatch(/could not fetch tiny-paper's tiny-0123abcd\.pth .*tiny-paper's test will not run/);
  });

  it('replaces a file there whose sha256 is wrong', async () => {
    const envDir = tempDir('rcb-assets-');
    const file = assetFile(envDir, asset());
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, 'truncated');

    const [r] = await fetchAssets({ envDir, python: PYTHON, assets: [asset()], progress: () => undefined });

    expect(r!.state).toBe('fetched');
    expect(readFileSync(file).equals(WEIGHTS)).toBe(true);
  });

  it('names the address and the error when the host does not answer', async () => {
    const envDir = tempDir('rcb-assets-');
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));

    const [r] = await fetchAssets({ envDir, python: PYTHON, assets: [asset({ url: `http://127.0.0.1:${port}/models/tiny.pth` })], progress: () => undefined });

    expect(r!.state).toBe('missing');
    expect(r!.why).toContain(`http://127.0.0.1:${port}/models/tiny.pth: `);
    expect(r!.why).toMatch(/Connection refused|URLError/);
  });

  it('fetches nothing offline, and says which paper that leaves out', async () => {
    const envDir = tempDir('rcb-assets-');
    const lines: string[] = [];
    const before = requests;
    const [r] = await fetchAssets({ envDir, python: PYTHON, assets: [asset()], offline: true, progress: (l) => void lines.push(l) });

    expect(r!.state).toBe('missing');
    expect(requests).toBe(before);
    expect(lines.join('\n')).toContain("--offline fetches nothing: tiny-paper's test will not run");
  });

  it('takes the address from a package of the environment with urlFrom', async () => {
    const envDir = tempDir('rcb-assets-');
    const pkg = join(envDir, 'site');
    mkdirSync(join(pkg, 'tinyweights'), { recursive: true });
    writeFileSync(join(pkg, 'tinyweights', '__init__.py'), `class Weights:\n    class V1:\n        url = ${JSON.stringify(`${base}/models/tiny.pth`)}\n`);
    const saved = process.env.PYTHONPATH;
    process.env.PYTHONPATH = pkg;
    try {
      const [r] = await fetchAssets({
        envDir,
        python: PYTHON,
        assets: [asset({ url: undefined, urlFrom: 'tinyweights.Weights.V1.url' })],
        progress: () => undefined,
      });
      expect(r!.state).toBe('fetched');
    } finally {
      if (saved === undefined) delete process.env.PYTHONPATH;
      else process.env.PYTHONPATH = saved;
    }
  });
});

describe('readEnvNotes and explainGap', () => {
  const file = join(packageRoot(), 'container', 'requirements-assets.json');

  it("reads the repository's file: REPA-E's VGG16 weights, and the notes of REPA-E and GMFlow", () => {
    const notes = readEnvNotes(file);

    expect(notes.assets.map((a) => [a.paper, a.path])).toEqual([['REPA-E', 'torch/hub/checkpoints/vgg16-397923af.pth']]);
    expect(notes.assets[0]!.urlFrom).toBe('torchvision.models.VGG16_Weights.IMAGENET1K_V1.url');
    expect(notes.gaps.map((g) => g.paper).sort()).toEqual(['GMFlow', 'REPA-E']);
  });

  it('applies a note while its asset is missing and its text is in the reason, and not otherwise', () => {
    const notes = readEnvNotes(file);
    const envDir = tempDir('rcb-assets-');
    const urlError = 'urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>';

    expect(explainGap(notes, 'REPA-E', urlError, envDir)).toMatch(/^needs torchvision's VGG16 ImageNet weights/);
    expect(explainGap(notes, 'REPA-E', urlError, null)).toMatch(/^needs torchvision's VGG16/);
    const vgg = assetFile(envDir, notes.assets[0]!);
    mkdirSync(join(vgg, '..'), { recursive: true });
    writeFileSync(vgg, 'x');
    expect(explainGap(notes, 'REPA-E', urlError, envDir)).toBeNull();

    expect(explainGap(notes, 'GMFlow', 'missing module mmgen.models.architectures.stylegan.ada', null)).toMatch(/^no mmgen build on the package index/);
    expect(explainGap(notes, 'GMFlow', 'missing module prettytable', null)).toBeNull();
    expect(explainGap(notes, 'DyT', 'missing module timm', null)).toBeNull();
  });

  it('names the file and the entry that is wrong', () => {
    const dir = tempDir('rcb-assets-');
    const bad = join(dir, 'notes.json');
    writeFileSync(bad, JSON.stringify({ assets: [{ paper: 'p', path: 'x', sha256Prefix: 'zz', what: 'w', url: 'http://h.invalid/x' }], gaps: [] }));
    expect(() => readEnvNotes(bad)).toThrow(`${bad}: assets.0.sha256Prefix`);

    writeFileSync(bad, JSON.stringify({ assets: [{ paper: 'p', path: '../x', sha256Prefix: 'abcdef01', what: 'w', url: 'http://h.invalid/x' }], gaps: [] }));
    expect(() => readEnvNotes(bad)).toThrow(`${bad}: assets.0.path: must stay inside assets/`);

    writeFileSync(bad, JSON.stringify({ assets: [{ paper: 'p', path: 'x', sha256Prefix: 'abcdef01', what: 'w' }], gaps: [] }));
    expect(() => readEnvNotes(bad)).toThrow(`${bad}: assets.0: give exactly one of url and urlFrom`);

    writeFileSync(bad, JSON.stringify({ assets: [], gaps: [{ paper: 'p', asset: 'nope', note: 'n' }] }));
    expect(() => readEnvNotes(bad)).toThrow(`${bad}: gaps.0.asset: no asset has the path nope`);
  });
});
