/**
 * The project's shared data, beside the checkout (`../shared`, as CI lays it out): the real
 * public pset and the prompts captured from the original harness. Read there, never copied.
 * The real pset is found through one setting, RCB_REAL_PSET (default the shared folder): a
 * user's clone has no ../shared, and points it at the pset/ folder of PatrickHua/ResearchCodeBench.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO } from './cli';

export const SHARED_DIR = join(REPO, '..', 'shared');
export const REAL_PSET = process.env.RCB_REAL_PSET ? resolve(process.env.RCB_REAL_PSET) : join(SHARED_DIR, 'data', 'researchcodebench', 'pset');
export const ORIGINAL_PROMPTS = join(SHARED_DIR, 'fixtures', 'original-prompts');

const warned = new Set<string>();

/**
 * `describe` when the real pset is there; outside CI without it, `describe.skip` with one
 * loud line saying what is skipped and how to get the set. In CI (CI=true) a missing pset
 * is not skipped: the tests run and fail.
 */
export function describeWithRealPset(name: string, body: () => void): void {
  const present = existsSync(join(REAL_PSET, 'papers.yaml'));
  if (present || process.env.CI === 'true') {
    describe(name, body);
    return;
  }
  if (!warned.has(name)) {
    warned.add(name);
    process.stderr.write(
      `SKIPPED "${name}": no real pset at ${REAL_PSET} (set RCB_REAL_PSET to the pset/ folder of a clone of PatrickHua/ResearchCodeBench)\n`,
    );
  }
  describe.skip(name, body);
}
