/**
 * The tests run the `rcb` command line from dist/ only while the build's stamp matches the
 * sources (scripts/build-stamp.ts): an edit since the build must send them back to tsx.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILD_SOURCE_DIRS, buildSourcesDigest, distIsCurrent, STAMP_FILE } from '../../scripts/build-stamp';

describe('the build stamp', () => {
  const root = mkdtempSync(join(tmpdir(), 'rcb-stamp-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  beforeAll(() => {
    for (const dir of BUILD_SOURCE_DIRS) mkdirSync(join(root, dir, 'sub'), { recursive: true });
    writeFileSync(join(root, 'tsconfig.json'), '{}');
    writeFileSync(join(root, 'tsconfig.build.json'), '{}');
    writeFileSync(join(root, 'core', 'a.ts'), 'export const a = 1;\n');
    writeFileSync(join(root, 'bin', 'sub', 'b.ts'), 'export const b = 2;\n');
    writeFileSync(join(root, 'core', 'notes.md'), 'not compiled\n');
    mkdirSync(join(root, 'dist'));
    writeFileSync(join(root, 'dist', STAMP_FILE), `${buildSourcesDigest(root)}\n`);
  });

  it('holds while the sources are those the build compiled, whatever else changes', () => {
    writeFileSync(join(root, 'core', 'notes.md'), 'edited, still not compiled\n');
    expect(distIsCurrent(root)).toBe(true);
  });

  it('fails on an edited, added or removed source, or an edited tsconfig, and without a stamp', () => {
    const edits: Array<[() => void, () => void]> = [
      [
        () => writeFileSync(join(root, 'bin', 'sub', 'b.ts'), 'export const b = 3;\n'),
        () => writeFileSync(join(root, 'bin', 'sub', 'b.ts'), 'export const b = 2;\n'),
      ],
      [() => writeFileSync(join(root, 'infra', 'new.ts'), ''), () => rmSync(join(root, 'infra', 'new.ts'))],
      [() => rmSync(join(root, 'core', 'a.ts')), () => writeFileSync(join(root, 'core', 'a.ts'), 'export const a = 1;\n')],
      [() => writeFileSync(join(root, 'tsconfig.build.json'), '{"x":1}'), () => writeFileSync(join(root, 'tsconfig.build.json'), '{}')],
    ];
    for (const [edit, undo] of edits) {
      edit();
      expect(distIsCurrent(root)).toBe(false);
      undo();
      expect(distIsCurrent(root)).toBe(true);
    }
    rmSync(join(root, 'dist', STAMP_FILE));
    expect(distIsCurrent(root)).toBe(false);
  });
});
