/**
 * Started by parent-death.test.ts, which SIGKILLs it mid-test: runs one candidate that
 * leaves a daemon (a double fork in a session of its own) and then outlives its time
 * limit, through the executor of the configuration given as JSON in argv[2]. RCB_TEST_MARK is
 * the marker the candidate's processes carry in their argv. Never ends by itself before it is killed.
 */
import { createLocalExecutor } from '../../../adapters/executor';
import { CORRECT_BODY, makeTinyPaper, modelSource } from '../../fixtures/executor/tiny-paper';

const config = JSON.parse(process.argv[2] ?? '{}') as { warm: boolean; unsafeNoSandbox: boolean };
const mark = process.env.RCB_TEST_MARK ?? 'rcb-parent-death';

// The sleepers last a minute: if containment failed, what the test leaves ends by itself.
const CANDIDATE = `
import os, sys, time
MARK = ${JSON.stringify(mark)}
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 256)
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", MARK, "daemon"])
    os._exit(0)
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", MARK, "test"])
`;

async function main(): Promise<void> {
  const paper = makeTinyPaper();
  const executor = await createLocalExecutor({
    ...config,
    jobs: 1,
    preload: config.warm ? ['json'] : undefined,
    limits: { timeoutSec: 50 },
    warn: () => undefined,
  });
  await executor.run([paper.candidate('dies-with-rcb', modelSource(CORRECT_BODY, CANDIDATE))]);
  await new Promise(() => undefined);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
