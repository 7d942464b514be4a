/**
 * The README's examples are true: the session under "Try it on the bundled example" is run
 * command by command on the bundled pset, in a fresh folder, and every output line it quotes
 * must be printed (`…` standing for text that differs between runs); the run directory the
 * "Common tasks" name is the one the session makes, and each rcb command they use exists.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, rcb, tempDir } from '../helpers/cli';

jest.setTimeout(600_000);

const README = readFileSync(join(REPO, 'README.md'), 'utf8');

/** The fenced block of `lang` that follows `heading`. */
function blockAfter(heading: string, lang: string): string {
  const at = README.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`README.md has no "${heading}"`);
  const open = README.indexOf(`\`\`\`${lang}\n`, at);
  const close = README.indexOf('\n```', open + 4);
  return README.slice(open + lang.length + 4, close);
}

/** Shell words of a command line: spaces split, double and single quotes group. */
function words(line: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

interface Step {
  command: string;
  expected: string[];
}

function session(): Step[] {
  const steps: Step[] = [];
  for (const line of blockAfter('## Try it on the bundled example', 'console').split('\n')) {
    if (line.startsWith('$ ')) steps.push({ command: line.slice(2), expected: [] });
    else if (line.trim()) steps.at(-1)!.expected.push(line);
  }
  return steps;
}

/** A quoted line as a pattern over one output line: `…` any text, runs of spaces any spacing. */
function linePattern(quoted: string): RegExp {
  const parts = quoted.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ +/g, '\\s+'));
  return new RegExp(`^${parts.join('.*')}$`);
}

/** Runs one README command line (rcb, optionally `| head -N` or `> FILE`) in `cwd`. */
function runLine(command: string, cwd: string): { status: number | null; output: string } {
  const [cmd, redirect] = command.split(/\s*>\s*/);
  const [main, pipe] = cmd.split(/\s*\|\s*/);
  const argv = words(main);
  expect(argv[0]).toBe('rcb');
  const r = rcb(argv.slice(1), { cwd, timeoutMs: 400_000 });
  let stdout = r.stdout;
  if (pipe) {
    const head = /^head -(\d+)$/.exec(pipe);
    if (!head) throw new Error(`README command pipes into ${pipe}: the test runs only \`| head -N\``);
    stdout = stdout.split('\n').slice(0, Number(head[1])).join('\n');
  }
  if (redirect) {
    writeFileSync(join(cwd, redirect.trim()), stdout);
    stdout = '';
  }
  return { status: r.status, output: `${stdout}\n${r.stderr}` };
}

describe("the README's example session on the bundled pset", () => {
  const cwd = tempDir('rcb-readme-');
  const steps = session();

  it('holds the commands a new user runs first', () => {
    expect(steps.map((s) => words(s.command).slice(0, 2).join(' '))).toEqual(['rcb run', 'rcb report', 'rcb show', 'rcb report', 'rcb runs']);
  });

  it('prints every line it quotes', () => {
    const missing: string[] = [];
    for (const step of steps) {
      const { status, output } = runLine(step.command, cwd);
      expect({ command: step.command, status }).toEqual({ command: step.command, status: 0 });
      const lines = output.split('\n').map((l) => l.trimEnd());
      for (const quoted of step.expected) {
        const re = linePattern(quoted.trimEnd());
        if (!lines.some((l) => re.test(l))) missing.push(`${step.command}: ${quoted}\n--- printed:\n${output.slice(0, 3000)}`);
      }
    }
    expect(missing).toEqual([]);
    // The page the session writes is the self-contained report.
    expect(readFileSync(join(cwd, 'report.html'), 'utf8')).toMatch(/^<!DOCTYPE html>[\s\S]*<table id="leaderboard"/);
  });

  it('names in "Common tasks" the run directory the session made, and only rcb commands that exist', () => {
    const common = blockAfter('## Common tasks', 'sh')
      .split('\n')
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter((l) => l.startsWith('rcb '));
    const dirs = common.flatMap((l) => words(l).filter((w) => w.startsWith('runs/')));
    expect(dirs.length).toBeGreaterThan(0);
    for (const d of new Set(dirs)) expect(existsSync(join(cwd, d, 'run.json'))).toBe(true);
    const commands = [...new Set(common.map((l) => words(l).slice(1, words(l)[1] === 'cloud' || words(l)[1] === 'sweep' ? 3 : 2)).map((w) => w.join(' ')))];
    for (const c of commands) {
      const help = rcb([...c.split(' '), '--help']);
      expect({ c, status: help.status }).toEqual({ c, status: 0 });
    }
  });

  it('stays within 200 lines', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(200);
  });
});
