/**
 * Pset overlays: the documented patch (here: a seed for smoothfocal's test) is written to a
 * new pset folder, the original untouched; the patched paper's entry names the overlay, so
 * the pset's digest (and a run's id) differ and the run's record of its papers carries it.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyOverlay, OverlayError } from '../../core/pset/overlay';
import { loadPset } from '../../core/pset/read-pset';
import { PSET_MINI, tempDir } from '../helpers/cli';

const TEST = 'smoothfocal/paper2code_test.py';

function overlayWith(files: Record<string, string>, manifest: string): string {
  const dir = tempDir('rcb-overlay-');
  writeFileSync(join(dir, 'overlay.yaml'), manifest);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

describe('applyOverlay', () => {
  const original = readFileSync(join(PSET_MINI, TEST), 'utf8');
  const patched = original.replace('import random', 'import random\nrandom.seed(7)');

  it("writes the patched pset to a new folder, names the overlay in the paper's entry, and changes only that paper's digest", () => {
    const pset = tempDir('rcb-overlay-pset-');
    cpSync(PSET_MINI, pset, { recursive: true });
    const overlay = overlayWith({ [TEST]: patched }, `- file: ${TEST}\n  reason: seed the test's random draws\n`);
    const out = join(tempDir('rcb-overlay-out-'), 'patched');

    const { digest, entries } = applyOverlay(pset, overlay, out);

    expect(entries).toEqual([{ file: TEST, reason: "seed the test's random draws" }]);
    expect(readFileSync(join(out, TEST), 'utf8')).toBe(patched);
    expect(readFileSync(join(pset, TEST), 'utf8')).toBe(original);
    const before = loadPset(pset);
    const after = loadPset(out);
    const meta = after.papers.find((p) => p.meta.id === 'smoothfocal')!.meta;
    expect(meta.extra.rcb_overlay).toEqual({
      digest,
      files: [{ file: 'paper2code_test.py', reason: "seed the test's random draws", original_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }],
    });
    expect(after.digest).not.toBe(before.digest);
    const digests = (p: typeof before) => Object.fromEntries(p.papers.map((x) => [x.meta.id, x.digest]));
    const changed = Object.entries(digests(after))
      .filter(([id, d]) => digests(before)[id] !== d)
      .map(([id]) => id);
    expect(changed).toEqual(['smoothfocal']);
  });

  it('refuses an undocumented, added or unlisted file, and a folder not empty', () => {
    const out = () => join(tempDir('rcb-overlay-out-'), 'patched');
    expect(() => applyOverlay(PSET_MINI, overlayWith({ [TEST]: patched }, `- file: ${TEST}\n`), out())).toThrow(/needs a file \(a pset path\) and a reason/);
    expect(() => applyOverlay(PSET_MINI, overlayWith({ 'smoothfocal/new.py': 'x' }, '- file: smoothfocal/new.py\n  reason: r\n'), out())).toThrow(/adds none/);
    expect(() => applyOverlay(PSET_MINI, overlayWith({ [TEST]: patched, 'smoothfocal/extra.py': 'x' }, `- file: ${TEST}\n  reason: r\n`), out())).toThrow(
      /does not list: smoothfocal\/extra.py/,
    );
    expect(() => applyOverlay(PSET_MINI, overlayWith({ [TEST]: patched }, `- file: ${TEST}\n  reason: r\n`), PSET_MINI)).toThrow(OverlayError);
  });
});
