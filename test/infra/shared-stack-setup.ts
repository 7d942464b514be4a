/**
 * globalSetup of the unit project: a folder for the one synthesized whole stack its infra
 * test files share (test/infra/helpers.ts sharedStack), named to the workers through the
 * environment, which they inherit.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHARED_STACK_DIR_ENV } from './shared-stack-env';

export default function setup(): void {
  process.env[SHARED_STACK_DIR_ENV] = mkdtempSync(join(tmpdir(), 'rcb-shared-stack-'));
}
