/**
 * The command line at its edges, as a user meets them: usage errors exit 2 as
 * docs/running-locally.md says, file flags are named in file errors, an empty --papers is
 * refused, and the README's command table lists every command.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, rcb, tempDir } from '../helpers/cli';

jest.setTimeout(120_000);

const root = tempDir('rcb-edges-');

describe('usage errors', () => {
  it.each([
    [['run', '--bogus'], "unknown option '--bogus'"],
    [['--bogus'], "unknown option '--bogus'"],
    [['prompt'], "missing required argument 'paper'"],
    [['report'], "missing required argument 'run-dir'"],
  ])('rcb %j exits 2, the documented code of a refused command line', (args, message) => {
    const r = rcb(args);
    expect(r.stderr).toContain(message);
    expect(r.status).toBe(2);
  });

  it('documents exit 2 for a refused command line', () => {
    expect(readFileSync(join(REPO, 'docs', 'running-locally.md'), 'utf8')).toMatch(
      /\| 2 +\| commander refused the command line \(unknown option, missing argument\)/,
    );
  });
});

describe('flags that name files and lists', () => {
  it('refuses --papers "" rather than running every paper', () => {
    const r = rcb(['run', '--papers', '', '--out', join(root, 'empty-papers')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('rcb: --papers "" names nothing; leave --papers out to take every paper\n');
  });

  it('names --model when a replay file is missing', () => {
    const r = rcb(['run', '--model', 'replay:/missing.jsonl', '--out', join(root, 'replay')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('rcb: --model replay:/missing.jsonl: /missing.jsonl does not exist (replay:FILE names a JSONL file of recorded answers)\n');
  });

  it.each([[['run', '--papers', 'adamlite', '--out', join(root, 'python')]], [['doctor', '--papers', 'adamlite']]])(
    'names --python when the interpreter is missing, without the hint about unreadable folders (rcb %j)',
    (args) => {
      const r = rcb([...args, '--python', '/missing/python3']);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe('rcb: --python /missing/python3: does not exist; give the path of a Python interpreter, or leave --python out for the default\n');
    },
  );

  it('names --python when it is a name not on PATH or a file that is not executable', () => {
    expect(rcb(['run', '--python', 'python-none-such', '--out', join(root, 'python')]).stderr).toBe(
      'rcb: --python python-none-such: is not on PATH; give the path of a Python interpreter\n',
    );
    expect(rcb(['run', '--python', join(REPO, 'README.md'), '--out', join(root, 'python')]).stderr).toBe(
      `rcb: --python ${join(REPO, 'README.md')}: is not an executable file\n`,
    );
  });
});

describe("the README's command table", () => {
  /** The command names a help text lists under "Commands:". */
  const commands = (help: string) => [...help.slice(help.indexOf('Commands:')).matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]).filter((c) => c !== 'help');

  it('lists every command of rcb and of rcb cloud', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const rows = readme.split('\n').filter((l) => l.startsWith('| `rcb '));
    const top = commands(rcb(['--help']).stdout);
    expect(top).toEqual(expect.arrayContaining(['run', 'report', 'export', 'cloud']));
    const missing = top.filter((c) => !rows.some((r) => r.startsWith(`| \`rcb ${c}`)));
    const cloud = commands(rcb(['cloud', '--help']).stdout);
    expect(cloud).toEqual(expect.arrayContaining(['doctor', 'run']));
    const cloudRow = rows.find((r) => r.startsWith('| `rcb cloud '))!;
    const missingCloud = cloud.filter((c) => !new RegExp(`[ |]${c}(\\\\\\||\`)`).test(`${cloudRow.split('`')[1]}\``));
    expect({ missing, missingCloud }).toEqual({ missing: [], missingCloud: [] });
  });
});
