import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunDir, removeStaleRunDirs } from '../../adapters/local/executor/run-dir';

describe('run directories', () => {
  let parent: string;

  beforeEach(() => {
    parent = mkdtempSync(join(tmpdir(), 'rcb-run-dir-test-'));
  });

  afterEach(() => {
    rmSync(parent, { recursive: true, force: true });
  });

  it('removes the run directories of dead owners only', async () => {
    const mine = await createRunDir(parent);
    const orphan = await createRunDir(parent);
    // The pid of a process that has certainly exited.
    const deadPid = spawnSync('/bin/true').pid;
    writeFileSync(join(orphan, 'owner.pid'), String(deadPid));

    const removed = await removeStaleRunDirs(parent);

    expect(removed).toEqual([orphan]);
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(mine)).toBe(true);
    expect(statSync(mine).mode & 0o777).toBe(0o711);
  });
});
