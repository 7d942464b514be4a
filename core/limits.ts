/**
 * The largest values rcb accepts from a flag or an input file, in one place so the flags, the
 * sweep file, the subset file and docs/running-locally.md ("Limits") agree. Each is far
 * above any real use and far below what would exhaust the machine or overflow a computation.
 */
import type { Document } from 'yaml';

/** Completions per task (`--samples`, a sweep file's `samples`). */
export const MAX_SAMPLES = 1000;
/** Seconds per test (`--timeout`, a sweep file's `timeout`): a day; Node's timers overflow past 24.8 days. */
export const MAX_TIMEOUT_SEC = 86_400;
/** Tests at once (`--jobs`), model calls in flight (`--concurrency`), `--repeat`, `--random-seeds`. */
export const MAX_PARALLEL = 1024;
/** Points of a subset file's ability grid (rcb writes 601). */
export const MAX_GRID_POINTS = 100_001;
/** Magnitude of a subset file's other numbers (grid ends, item parameters, prior, z, inflation). */
export const MAX_SUBSET_MAGNITUDE = 1000;
/** Fitting iterations a subset file may ask for (rcb writes 60). */
export const MAX_FIT_ITERATIONS = 100_000;
/** Bytes of a replay file (`--model replay:FILE`). */
export const MAX_REPLAY_BYTES = 256 * 2 ** 20;
/** Aliases a YAML file may expand (the yaml package's own default): a "billion laughs" file is refused. */
export const MAX_YAML_ALIASES = 100;

/** A YAML document as plain data, or the reason it cannot be (too many aliases). */
export function yamlData(doc: Document): { data: unknown } | { error: string } {
  try {
    return { data: doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }) };
  } catch (e) {
    if (e instanceof ReferenceError) return { error: `more than ${MAX_YAML_ALIASES} alias expansions (a YAML alias bomb?); write the values out` };
    throw e;
  }
}
