/**
 * The tests' TORCH_HOME: an interpreter whose environment has `assets/torch` (where `rcb env
 * install` puts the checkpoints a paper's test would download) gives the tests that folder,
 * readable and not writable, in the sandbox `auto` picks (bubblewrap here, or the uid sandbox);
 * an interpreter without one leaves TORCH_HOME unset. No network: the test reads the file.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createColdExecutor } from '../../adapters/executor';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { CORRECT_BODY, makeTinyPaper, modelSource, type TinyPaper } from '../fixtures/executor/tiny-paper';

const BASE = '/usr/bin/python3';

let paper: TinyPaper;
let venv: string;

beforeAll(() => {
  paper = makeTinyPaper();
  // The sandbox's users must be able to enter the folders above the environment.
  chmodSync(paper.root, 0o755);
  venv = join(paper.root, 'env');
  execFileSync(BASE, ['-m', 'venv', '--system-site-packages', '--without-pip', venv]);
  const checkpoints = join(venv, 'assets', 'torch', 'hub', 'checkpoints');
  mkdirSync(checkpoints, { recursive: true });
  writeFileSync(join(checkpoints, 'tiny-0123abcd.pth'), 'tiny weights\n', { mode: 0o644 });
}, 60_000);

afterAll(() => {
  rmSync(paper.root, { recursive: true, force: true });
});

const PROBE = [
  'import json, os',
  'home = os.environ.get("TORCH_HOME")',
  'seen = {"home": home}',
  'if home:',
  '    with open(os.path.join(home, "hub", "checkpoints", "tiny-0123abcd.pth")) as f:',
  '        seen["weights"] = f.read().strip()',
  '    try:',
  '        open(os.path.join(home, "hub", "checkpoints", "written.pth"), "w").close()',
  '        seen["writable"] = True',
  '    except OSError:',
  '        seen["writable"] = False',
  'print("SEEN=" + json.dumps(seen))',
].join('\n');

async function seen(python: string, sandbox: 'auto' | 'uid' = 'auto'): Promise<Record<string, unknown>> {
  const executor = await createColdExecutor({ jobs: 1, python, sandbox, warn: () => undefined });
  try {
    const [r] = await executor.run([paper.candidate('tiny/add', modelSource(CORRECT_BODY, PROBE))]);
    const line = /SEEN=(.*)/.exec(r!.stdout.text);
    if (!line) throw new Error(`no SEEN line: ${r!.stderr.text.slice(-2000)}`);
    return JSON.parse(line[1]!) as Record<string, unknown>;
  } finally {
    await executor.close();
  }
}

describe('TORCH_HOME of the tests', () => {
  it("is the environment's assets/torch, readable and read-only, when it exists", async () => {
    const s = await seen(join(venv, 'bin', 'python'));

    expect(String(s.home)).toMatch(/\/env\/assets\/torch$/);
    expect(s.weights).toBe('tiny weights');
    expect(s.writable).toBe(false);
  }, 120_000);

  (runningAsRoot() ? it : it.skip)(
    'is the same in the uid sandbox, as on Fargate',
    async () => {
      const s = await seen(join(venv, 'bin', 'python'), 'uid');

      expect(String(s.home)).toMatch(/\/env\/assets\/torch$/);
      expect(s.weights).toBe('tiny weights');
      expect(s.writable).toBe(false);
    },
    120_000,
  );

  it('is unset for an interpreter without one', async () => {
    const s = await seen(BASE);

    expect(s.home).toBeNull();
  }, 120_000);
});
