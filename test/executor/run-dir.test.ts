import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunDir, removeStaleRunDirs } from '../../adapters/executor/run-dir';

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
    const deadPid = spawnSync('/bin/true').pid!;
    const ownerFile = join(orphan, 'owner.json');
    writeFileSync(ownerFile, JSON.stringify({ ...JSON.parse(readFileSync(ownerFile, 'utf8')), pid: deadPid }));

    const removed = await removeStaleRunDirs(parent);

    expect(removed).toEqual([orphan]);
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(mine)).toBe(true);
    expect(statSync(mine).mode & 0o777).toBe(0o711);
  });

  it('never removes the directory of an owner in another pid namespace, or of a live owner whose pid it cannot vouch for', async () => {
    const elsewhere = await createRunDir(parent);
    const reused = await createRunDir(parent);
    const legacy = await createRunDir(parent);
    const rewrite = (dir: string, change: object) => {
      const file = join(dir, 'owner.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), ...change }));
    };
    // A dead pid, but of another namespace (rcb in a container sharing this /tmp): its pid means nothing here.
    rewrite(elsewhere, { pid: spawnSync('/bin/true').pid, pidNamespace: 'pid:[1]' });
    // This very process's pid, with another start time: a later process reusing the owner's pid.
    rewrite(reused, { startTime: '1' });
    // A directory of an older rcb that recorded a bare pid.
    rmSync(join(legacy, 'owner.json'));
    writeFileSync(join(legacy, 'owner.pid'), String(spawnSync('/bin/true').pid));

    const removed = await removeStaleRunDirs(parent);

    expect(removed).toEqual([reused]);
    expect([existsSync(elsewhere), existsSync(legacy)]).toEqual([true, true]);
  });
});
