/**
 * The cold executor without a sandbox (unsafeNoSandbox): the same driver, environment
 * allow-list, limits and process-group kill, but no namespaces.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { RawExecution } from '../../core/executor';
import { type ColdExecutor, createColdExecutor } from '../../adapters/executor';
import { CORRECT_BODY, makeTinyPaper, modelSource, processesWith, type TinyPaper, WRONG_BODY } from '../fixtures/executor/tiny-paper';

let paper: TinyPaper;
let executor: ColdExecutor;
const warnings: string[] = [];

async function runOne(source: string): Promise<RawExecution> {
  const [result] = await executor.run([paper.candidate('tiny/add', source)]);
  return result;
}

beforeAll(async () => {
  paper = makeTinyPaper();
  process.env.FAKE_API_KEY = 'sk-unsafe-mode-key';
  executor = await createColdExecutor({
    jobs: 2,
    unsafeNoSandbox: true,
    limits: { timeoutSec: 10 },
    envAllow: ['FAKE_API_KEY'],
    warn: (m) => void warnings.push(m),
  });
});

afterAll(async () => {
  delete process.env.FAKE_API_KEY;
  await executor?.close();
  rmSync(paper.root, { recursive: true, force: true });
});

describe('ColdExecutor (unsafeNoSandbox)', () => {
  it('warns that tests run without a sandbox', () => {
    expect(warnings.join('\n')).toMatch(/WITHOUT a sandbox/);
  });

  it('runs a correct candidate to a pass with the driver report', async () => {
    const r = await runOne(modelSource(CORRECT_BODY));

    expect(r.infraError).toBeUndefined();
    expect(r.sandbox).toBe('none');
    expect(r.exitCode).toBe(0);
    expect(r.driver).toMatchObject({ testsRun: 2, failures: 0, errors: 0, ending: 'exit', exitCode: 0, flags: [] });
  });

  it('reports a wrong candidate as a failure', async () => {
    const r = await runOne(modelSource(WRONG_BODY));

    expect(r.exitCode).toBe(1);
    expect(r.driver?.failures).toBe(1);
    expect(r.markersSeen).toEqual(expect.arrayContaining(['Traceback', 'failed']));
  });

  it('keeps the environment allow-list', async () => {
    const r = await runOne(modelSource(CORRECT_BODY, 'import os\nprint("KEY=" + repr(os.environ.get("FAKE_API_KEY")))'));

    expect(r.stdout.text).toContain('KEY=None');
  });

  it('kills a background process left in the process group', async () => {
    const mark = `rcbmark${randomBytes(6).toString('hex')}`;
    const top = `import subprocess, sys\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "${mark}"])`;

    const r = await runOne(modelSource(CORRECT_BODY, top));

    expect(r.exitCode).toBe(0);
    // Ended with its test, not at the 10 s limit: the left process held nothing open.
    expect(r.killedFor).toBeNull();
    expect(processesWith(mark)).toEqual([]);
  });
});
