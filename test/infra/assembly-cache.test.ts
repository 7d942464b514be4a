/**
 * The emulator's cache of synthesized assemblies (emulator/assembly-cache.ts): the key follows
 * every file a synthesis reads and nothing else, processes asking for the same key at once
 * synthesize it once, a dead holder's lock is taken over, and old entries are removed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cachedWorkflow, KEPT_ENTRIES, synthesisKey, synthesisSources } from '../../emulator/assembly-cache';
import { CONTEXT_KEYS } from '../../infra/config';
import { tempDir } from '../helpers/cli';

jest.setTimeout(600_000);

function checkout(): string {
  const root = tempDir('rcb-assembly-key-');
  const files: Record<string, string> = {
    'package.json': '{}',
    'cdk.json': '{"context":{}}',
    'functions/generate/handler.ts': 'export const a = 1;',
    'examples/pset-mini/p/test/test_x.py': 'assert True',
    'test/e2e/x.test.ts': 'it()',
    'docs/x.md': '# x',
    'node_modules/.package-lock.json': '{"v":1}',
    'node_modules/esbuild/index.js': '',
    'core/node_modules/x.js': '',
    '.git/HEAD': 'ref',
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('the key of a synthesis', () => {
  it('reads the sources, the examples and the installed packages, not test/, docs/, .git or nested node_modules', () => {
    const root = checkout();
    expect(synthesisSources(root)).toEqual(['cdk.json', 'examples/pset-mini/p/test/test_x.py', 'functions/generate/handler.ts', 'package.json']);
    const key = () => synthesisKey({ bundle: true }, root);
    const first = key();
    expect(key()).toBe(first);

    for (const ignored of ['test/e2e/x.test.ts', 'docs/x.md', 'node_modules/esbuild/index.js', 'core/node_modules/x.js', '.git/HEAD']) {
      writeFileSync(join(root, ignored), 'changed');
      expect([ignored, key()]).toEqual([ignored, first]);
    }
    const seen = new Set([first]);
    for (const read of ['functions/generate/handler.ts', 'examples/pset-mini/p/test/test_x.py', 'cdk.json', 'node_modules/.package-lock.json']) {
      writeFileSync(join(root, read), 'changed');
      expect([read, seen.has(key())]).toEqual([read, false]);
      seen.add(key());
    }
    writeFileSync(join(root, 'functions', 'new.ts'), '');
    expect(seen.has(key())).toBe(false);
    expect(synthesisKey({ bundle: false }, root)).not.toBe(key());
  });

  it('follows the context, and the content of a file the context names', () => {
    const root = checkout();
    const models = join(root, 'models.yaml');
    writeFileSync(models, 'a: 1\n');
    const withModels = () => synthesisKey({ bundle: true, context: { [CONTEXT_KEYS.modelsFile]: models } }, root);
    const before = withModels();
    expect(before).not.toBe(synthesisKey({ bundle: true }, root));
    expect(synthesisKey({ bundle: true, context: { 'rcb:x': 1 } }, root)).not.toBe(synthesisKey({ bundle: true, context: { 'rcb:x': 2 } }, root));
    writeFileSync(models, 'a: 2\n');
    expect(withModels()).not.toBe(before);
  });
});

describe('cachedWorkflow', () => {
  it("synthesizes once for two callers at once, past a dead holder's lock, reads it back after, and keeps the newest entries", async () => {
    // Prepare: a cache holding KEPT_ENTRIES old entries, and the lock of a synthesis whose process is gone.
    const cacheRoot = tempDir('rcb-assembly-cache-');
    const old = Array.from({ length: KEPT_ENTRIES }, (_, i) => join(cacheRoot, String(i).repeat(64)));
    old.forEach((dir, i) => {
      mkdirSync(dir);
      writeFileSync(join(dir, 'workflow.json'), '{}');
      const t = new Date(Date.UTC(2020, 0, 1 + i));
      utimesSync(join(dir, 'workflow.json'), t, t);
    });
    const key = synthesisKey({ bundle: false });
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeFileSync(join(cacheRoot, `${key}.lock`), String(gone));

    // Act
    const [a, b] = await Promise.all([cachedWorkflow({ bundle: false }, { cacheRoot }), cachedWorkflow({ bundle: false }, { cacheRoot })]);
    const again = await cachedWorkflow({ bundle: false }, { cacheRoot });

    // Assess: one synthesis, the other two read it.
    expect([a.cached, b.cached].sort()).toEqual([false, true]);
    expect(again.cached).toBe(true);
    expect([a.key, b.key, again.key]).toEqual([key, key, key]);
    expect(b.workflow).toEqual(a.workflow);
    expect(again.workflow).toEqual(a.workflow);
    expect(a.workflow.definition.StartAt).toEqual(expect.any(String));
    expect(a.workflow.deployment).toBeUndefined();
    const context = a.workflow.imageContext!;
    expect(context.directory.startsWith(join(cacheRoot, key))).toBe(true);
    expect(readFileSync(join(context.directory, 'container', 'Dockerfile'), 'utf8')).toContain('FROM');
    // The oldest entry made room; the lock is gone.
    expect(existsSync(old[0])).toBe(false);
    expect(old.slice(1).every(existsSync)).toBe(true);
    expect(readdirSync(cacheRoot).sort()).toEqual([...old.slice(1).map((d) => d.slice(cacheRoot.length + 1)), key].sort());
  });
});
