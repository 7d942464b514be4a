/**
 * The project's shared data, beside the checkout (`../shared`, as CI lays it out): the real
 * public pset and the prompts captured from the original harness. Read there, never copied.
 */
import { join } from 'node:path';
import { REPO } from './cli';

export const SHARED_DIR = join(REPO, '..', 'shared');
export const REAL_PSET = join(SHARED_DIR, 'data', 'researchcodebench', 'pset');
export const ORIGINAL_PROMPTS = join(SHARED_DIR, 'fixtures', 'original-prompts');
