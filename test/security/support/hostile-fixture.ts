/**
 * The hostile completions (test/fixtures/replays/hostile.jsonl) made this test process's own
 * where they reach the whole machine, so that tests running beside each other (two jest
 * workers, or a second suite on the machine) do not see or remove each other's traces:
 * - the background-process case leaves `sleep 317`, which a test looks for in `ps`: here it
 *   is `sleep 317.<pid>` (about as long), and each process looks only for its own;
 * - the cases that reach outside the workspace aim at /tmp/rcb-hostile-sentinel, which a
 *   test creates and removes: here it is /tmp/rcb-hostile-sentinel-<pid>.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const HOSTILE_FIXTURE = join(__dirname, '..', '..', 'fixtures', 'replays', 'hostile.jsonl');

/** The sleep the background-process case starts, in this process's copy. */
export const STRAY_SLEEP = `317.${process.pid}`;

/** The folder outside the workspace the cases read and write, in this process's copy. */
export const SENTINEL_DIR = `/tmp/rcb-hostile-sentinel-${process.pid}`;

/** The fixture's lines with this process's sleeper. */
export function hostileFixtureText(): string {
  const text = readFileSync(HOSTILE_FIXTURE, 'utf8');
  const own = text.replace(/\['sleep', '317'\]/g, `['sleep', '${STRAY_SLEEP}']`);
  if (own === text) throw new Error(`${HOSTILE_FIXTURE}: no ['sleep', '317'] case to make this process's own`);
  return own.replace(/\/tmp\/rcb-hostile-sentinel\//g, `${SENTINEL_DIR}/`);
}

/** Writes this process's copy of the fixture to `file` (a replay file for rcb) and returns its path. */
export function writeHostileFixture(file: string): string {
  writeFileSync(file, hostileFixtureText());
  return file;
}

/** This process's sleepers still alive anywhere on the machine. */
export function strayProcesses(): string[] {
  const own = new RegExp(`^sleep ${STRAY_SLEEP.replace('.', '\\.')}(\\s|$)`);
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => own.test(l.trim()));
}
