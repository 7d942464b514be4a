/**
 * `rcb overlay --pset PSET --overlay DIR --out OUT`: the pset with an overlay's documented
 * patches applied, written to a new folder (core/pset/overlay.ts); the original is kept. Run
 * it with `rcb run --pset OUT`: its digest, and so its run ids, differ from the original's.
 */
import { resolve } from 'node:path';
import { applyOverlay, OverlayError } from '../../core/pset/overlay';
import { formatProblem, readPset } from '../../core/pset/read-pset';
import { defaultPsetDir, UsageError } from './common';

export function overlayCommand(opts: { pset?: string; overlay: string; out: string }): number {
  const psetDir = resolve(opts.pset ?? defaultPsetDir());
  const outDir = resolve(opts.out);
  const before = readPset(psetDir);
  if (before.problems.length) throw new UsageError(`${psetDir} has problems (rcb validate --pset ${psetDir}); fix them before overlaying it`);
  let applied;
  try {
    applied = applyOverlay(psetDir, resolve(opts.overlay), outDir);
  } catch (e) {
    if (e instanceof OverlayError) throw new UsageError(e.message);
    throw e;
  }
  const after = readPset(outDir);
  for (const p of after.problems) process.stdout.write(`${formatProblem(p)}\n`);
  if (after.problems.length) {
    process.stderr.write(`the patched pset in ${outDir} has ${after.problems.length} problem(s): the overlay breaks it\n`);
    return 1;
  }
  for (const e of applied.entries) process.stdout.write(`${e.file}: ${e.reason}\n`);
  process.stderr.write(
    `${outDir}: ${psetDir} with overlay ${applied.digest.slice(0, 12)} (${applied.entries.length} file(s)); ` +
      `pset digest ${before.pset.digest.slice(0, 12)} -> ${after.pset.digest.slice(0, 12)}: run it with --pset ${outDir}\n`,
  );
  return 0;
}
