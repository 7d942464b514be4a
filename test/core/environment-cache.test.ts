/**
 * The environment check's cache on disk (adapters/local/environment-cache.ts): a paper found
 * broken for want of a package is checked again once the package is installed, without
 * `rcb doctor`. Found so: numpy installed after a first run, and every later `rcb run` still
 * said "grouprms cannot run here (missing module numpy)" from the cache.
 */
import { chmodSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileEnvironmentCache, FileFlakyCache, interpreterFingerprint } from '../../adapters/local/environment-cache';
import { tempDir } from '../helpers/cli';

/** An interpreter that answers the fingerprint's question with `sitePackages` as its only import folder. */
function fakeInterpreter(dir: string, sitePackages: string): string {
  const path = join(dir, 'python');
  writeFileSync(path, `#!/bin/sh\necho '["${sitePackages}"]'\n`);
  chmodSync(path, 0o755);
  return path;
}

/** A folder holding an interpreter whose only import folder is its `site-packages`, dated 1 January. */
function fakeEnvironment(): { dir: string; site: string; python: string } {
  const dir = tempDir('rcb-env-cache-');
  const site = join(dir, 'site-packages');
  mkdirSync(site);
  utimesSync(site, new Date('2026-01-01'), new Date('2026-01-01'));
  return { dir, site, python: fakeInterpreter(dir, site) };
}

/** A package installed into `sitePackages`: a new folder, whose folder's time moves on. */
function install(sitePackages: string, name: string, at: Date): void {
  mkdirSync(join(sitePackages, name));
  utimesSync(sitePackages, at, at);
}

const broken = { paper: 'grouprms', runs: false, reason: 'missing module numpy' };

describe('the environment cache on disk', () => {
  it('forgets a result once a package is installed where the interpreter imports from', () => {
    const { dir, site, python } = fakeEnvironment();
    const file = join(dir, 'environment.json');

    new FileEnvironmentCache(file).put('digest1', python, broken);
    expect(new FileEnvironmentCache(file).get('digest1', python)).toEqual(broken);

    install(site, 'numpy', new Date('2026-01-02'));
    const after = new FileEnvironmentCache(file);
    expect(after.get('digest1', python)).toBeNull();
    // Checked again and stored: found from then on, in one record per paper and interpreter.
    after.put('digest1', python, { paper: 'grouprms', runs: true, reason: null });
    expect(new FileEnvironmentCache(file).get('digest1', python)).toEqual({ paper: 'grouprms', runs: true, reason: null });
  });

  it('keeps the flaky snippets doctor found only for the packages it found them with', () => {
    const { dir, site, python } = fakeEnvironment();
    const file = join(dir, 'flaky.json');
    const record = { paper: 'LEN', repeat: 3, flaky: [{ file: 'Synthetic.py', snippet: 'lazy extra newton' }] };
    new FileFlakyCache(file).put('digest1', python, record);
    expect(new FileFlakyCache(file).get('digest1', python)).toEqual(record);
    install(site, 'torch', new Date('2026-01-02'));
    expect(new FileFlakyCache(file).get('digest1', python)).toBeNull();
  });

  it('treats a record from before fingerprints, and one for an interpreter that cannot run, as unknown', () => {
    const dir = tempDir('rcb-env-cache-');
    const file = join(dir, 'environment.json');
    const python = fakeInterpreter(dir, dir);
    writeFileSync(file, JSON.stringify({ [`${python}\0digest1`]: { ...broken, checkedAt: '2026-01-01T00:00:00.000Z' } }));
    expect(new FileEnvironmentCache(file).get('digest1', python)).toBeNull();

    const missing = join(dir, 'no-such-python');
    expect(interpreterFingerprint(missing)).toMatch(/^unrunnable:/);
    expect(interpreterFingerprint(python)).not.toMatch(/^unrunnable:/);
    expect(interpreterFingerprint(python)).toBe(interpreterFingerprint(python));
  });

  it('fingerprints an interpreter once per cache object (one command), however many papers it reads and writes', () => {
    const dir = tempDir('rcb-env-cache-');
    const file = join(dir, 'environment.json');
    let asked = 0;
    const cache = new FileEnvironmentCache(file, undefined, (i) => {
      asked++;
      return interpreterFingerprint(i);
    });
    cache.put('d1', '/usr/bin/python3', broken);
    cache.put('d2', '/usr/bin/python3', broken);
    expect([cache.get('d1', '/usr/bin/python3'), cache.get('d2', '/usr/bin/python3')]).toEqual([broken, broken]);
    expect(asked).toBe(1);
  });
});
