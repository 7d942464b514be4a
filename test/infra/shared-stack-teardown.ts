/** globalTeardown of the unit project: removes the shared stack's folder. */
import { rmSync } from 'node:fs';
import { SHARED_STACK_DIR_ENV } from './shared-stack-env';

export default function teardown(): void {
  const dir = process.env[SHARED_STACK_DIR_ENV];
  if (dir) rmSync(dir, { recursive: true, force: true });
}
