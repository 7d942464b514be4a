/**
 * Issue 25's rough edges as a user meets them, through the command line in a child process:
 * damaged run stores said in one line, names that match nothing answered with the nearest
 * ones and blamed on their flag, runs with nothing in common refused, a dearer batch
 * warned of, apt waiting for the dpkg lock, replay models in `cloud run --help`.
 */
import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, statSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { REPO, rcb, tempDir } from '../helpers/cli';

jest.setTimeout(600_000);

describe('damaged run directories', () => {
  let root: string;
  let good: string;
  beforeAll(() => {
    root = tempDir();
    good = join(root, 'runs', 'good');
    const r = rcb(['run', '--model', 'oracle', '--papers', 'adamlite', '--out', good]);
    expect(r.status).toBe(0);
    const runs = join(root, 'runs');
    // Not SQLite at all.
    mkdirSync(join(runs, 'garbage'));
    copyFileSync(join(good, 'run.json'), join(runs, 'garbage', 'run.json'));
    writeFileSync(join(runs, 'garbage', 'rcb.sqlite'), 'this is not a database, it is a shopping list\n'.repeat(200));
    // Another program's SQLite database.
    mkdirSync(join(runs, 'foreign'));
    copyFileSync(join(good, 'run.json'), join(runs, 'foreign', 'run.json'));
    const db = new Database(join(runs, 'foreign', 'rcb.sqlite'));
    db.exec('CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)');
    db.close();
    // rcb's store with pages overwritten in the middle (its WAL folded in first).
    cpSync(good, join(runs, 'pages'), { recursive: true });
    const store = new Database(join(runs, 'pages', 'rcb.sqlite'));
    store.pragma('wal_checkpoint(TRUNCATE)');
    store.close();
    const fd = openSync(join(runs, 'pages', 'rcb.sqlite'), 'r+');
    writeSync(fd, Buffer.alloc(3 * 4096, 0xff), 0, 3 * 4096, 2 * 4096);
    closeSync(fd);
    // A run.json that is not one.
    cpSync(good, join(runs, 'badjson'), { recursive: true });
    writeFileSync(join(runs, 'badjson', 'run.json'), '{"runId": ');
  });

  it.each([
    ['garbage', /rcb\.sqlite: not an SQLite database/],
    ['foreign', /rcb\.sqlite: an SQLite database, but not an rcb store \(no table "runs"; its tables: photos\)/],
    ['pages', /rcb\.sqlite: the SQLite database is damaged/],
    ['badjson', /run\.json: not the run\.json rcb writes/],
  ])('rcb report on the %s folder: one rcb: line naming the file, exit 65', (name, message) => {
    const dir = join(root, 'runs', name);
    for (const args of [
      ['report', dir],
      ['show', dir],
      ['export', dir, '--format', 'inspect', '--out', join(root, `x-${name}`)],
    ]) {
      const r = rcb(args);
      expect({ args, status: r.status }).toEqual({ args, status: 65 });
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^rcb: \//);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toContain(dir);
      expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    }
  });

  it('leaves a foreign database as it was: no rcb table written into it', () => {
    const db = new Database(join(root, 'runs', 'foreign', 'rcb.sqlite'), { readonly: true });
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
    db.close();
    expect(tables).toEqual(['photos']);
  });

  it('rcb runs lists the good run and marks each bad folder DAMAGED, exit 0', () => {
    const r = rcb(['runs', join(root, 'runs')], { cwd: root });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^runs\/good {2}run [0-9a-f]+ {2}succeeded/m);
    for (const name of ['badjson', 'foreign', 'garbage', 'pages']) expect(r.stdout).toMatch(new RegExp(`^runs/${name}  DAMAGED  /\\S+/runs/${name}/`, 'm'));
    expect(r.stderr).toContain('4 of 5 run directories could not be read (marked DAMAGED)');
    const json = JSON.parse(rcb(['runs', join(root, 'runs'), '--json']).stdout) as { runId?: string; damaged?: string }[];
    expect(json.filter((x) => x.runId)).toHaveLength(1);
    expect(json.filter((x) => x.damaged)).toHaveLength(4);
  });

  it('the good run still reports', () => {
    expect(rcb(['report', good]).status).toBe(0);
  });
});

describe('names that match nothing: the nearest names, the flag blamed', () => {
  it.each([
    [['run', '--papers', 'adamlit', '--out', '/nonexistent/never'], '--papers: unknown paper "adamlit" in the pset at ', 'did you mean "adamlite"?'],
    [['tasks', '--papers', 'grouprm'], '--papers: unknown paper "grouprm"', 'did you mean "grouprms"?'],
    [['estimate', '--model', 'claude-sonet-4.6'], '--model: unknown model "claude-sonet-4.6" in the model registry', 'did you mean "claude-sonnet-4.6"'],
    [['run', '--model', 'orcale', '--out', '/nonexistent/never'], '--model: unknown model "orcale"', 'did you mean "oracle"?'],
    [['prompt', 'adamlite', 'cosine decy'], 'the <snippet> argument: unknown snippet "cosine decy" in paper "adamlite"', 'did you mean "cosine decay"?'],
    [['prompt', 'adamlit', 'cosine decay'], 'the <paper> argument: unknown paper "adamlit"', 'did you mean "adamlite"?'],
  ])('rcb %j', (args, blame, hint) => {
    const r = rcb(args);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`rcb: ${blame}`);
    expect(r.stderr).toContain(hint);
    expect(r.stderr).not.toMatch(/papers\.yaml:0|rcb validate/);
  });

  it('rcb validate --papers with a typo blames the flag, not papers.yaml', () => {
    const r = rcb(['validate', '--papers', 'smoothfoca']);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^--papers: unknown paper "smoothfoca" in the pset at \S+; did you mean "smoothfocal"\?/m);
  });
});

describe('rcb compare with nothing in common', () => {
  let a: string;
  let b: string;
  let c: string;
  beforeAll(() => {
    const dir = tempDir();
    [a, b, c] = ['a', 'b', 'c'].map((n) => join(dir, n));
    expect(rcb(['run', '--model', 'oracle', '--papers', 'adamlite', '--out', a]).status).toBe(0);
    expect(rcb(['run', '--model', 'oracle', '--papers', 'grouprms', '--out', b]).status).toBe(0);
    expect(rcb(['run', '--model', 'empty', '--papers', 'adamlite', '--out', c]).status).toBe(0);
  });

  it('no task in common: exit 1, says so, prints no 0.00 vs 0.00', () => {
    const r = rcb(['compare', a, b]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^rcb: the runs have no scored task in common for oracle, so nothing to compare \(papers of \S+: adamlite; of \S+: grouprms/);
  });

  it("no model in common: exit 1, names each run's models", () => {
    const r = rcb(['compare', a, c]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rcb: the runs have no model in common, so no task to compare \(\S+: oracle; \S+: empty\)/);
  });
});

describe('the batch estimate dearer than cached interactive calls', () => {
  it('warns, naming the model and both figures', () => {
    const dir = tempDir();
    const models = join(dir, 'models.yaml');
    // Cache hits nearly free, batch at a price above the cached one: the paper-long shared prefix makes batch dearer.
    writeFileSync(
      models,
      [
        'models:',
        '  - id: cache-friendly',
        '    provider: openai',
        '    model: cache-friendly-1',
        '    cache_min_tokens: 16',
        '    params: { max_output_tokens: 1000, temperature: 0 }',
        '    prices: { input: 10, cached_input: 0.01, output: 0.1, as_of: "2026-01-01", batch: { input: 8, cached_input: 8, output: 0.05, as_of: "2026-01-01", source: https://mirror.example.invalid/prices } }',
        '    knowledge_cutoff: "2024-01"',
        '    context_window: 1000000',
        '  - id: plain',
        '    provider: openai',
        '    model: plain-1',
        '    params: { max_output_tokens: 1000, temperature: 0 }',
        '    prices: { input: 1, cached_input: 0.5, output: 2, as_of: "2026-01-01", batch: { input: 0.5, cached_input: 0.25, output: 1, as_of: "2026-01-01", source: https://mirror.example.invalid/prices } }',
        '    knowledge_cutoff: "2024-01"',
        '    context_window: 1000000',
        '',
      ].join('\n'),
    );
    const r = rcb(['estimate', '--model', 'cache-friendly', '--model', 'plain', '--models-file', models]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /^warning: for cache-friendly batch mode is dearer than interactive calls with prompt caching \(expected \$[\d.]+ vs \$[\d.]+\): a batch counts no cache hits/m,
    );
    expect(r.stdout).not.toMatch(/warning: for plain/);
  });
});

describe('apt and the dpkg lock', () => {
  it('scripts/system-packages.sh passes DPkg::Lock::Timeout to every apt-get, so a held lock is waited for', () => {
    // Prepare: a PATH where every package is missing and apt-get records its arguments.
    const dir = tempDir();
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    const log = join(dir, 'apt.log');
    writeFileSync(join(bin, 'dpkg-query'), '#!/bin/sh\nexit 1\n');
    writeFileSync(join(bin, 'apt-get'), `#!/bin/sh\necho "$@" >> "${log}"\n`);
    writeFileSync(join(bin, 'id'), '#!/bin/sh\necho 0\n');
    for (const f of ['dpkg-query', 'apt-get', 'id']) chmodSync(join(bin, f), 0o755);
    // Act
    const r = spawnSync('bash', [join(REPO, 'scripts', 'system-packages.sh')], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, RCB_APT_LOCK_TIMEOUT: '42' },
    });
    // Assess
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('waiting up to 42s if another apt holds the dpkg lock');
    const calls = readFileSync(log, 'utf8').trim().split('\n');
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatch(/^-o DPkg::Lock::Timeout=42 update/);
    expect(calls[1]).toMatch(/^-o DPkg::Lock::Timeout=42 install -y -qq bubblewrap python3 python3-numpy/);
    expect(statSync(join(REPO, 'quickstart.sh')).isFile()).toBe(true);
    expect(readFileSync(join(REPO, 'quickstart.sh'), 'utf8')).toContain('bash scripts/system-packages.sh');
  });
});

describe('rcb cloud run --help', () => {
  it('lists replay models among what --model takes', () => {
    const r = rcb(['cloud', 'run', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout.replace(/\s+/g, ' ')).toContain('model: oracle, empty, replay:FILE (recorded answers, uploaded with the run) or a registry id');
  });
});
