/**
 * Runs one containment trial in this process (started as an unprivileged user by
 * process-containment.test.ts) and prints its outcome as one JSON line.
 */
import { runContainmentTrial, type TrialConfig } from './containment-trial';

const config = JSON.parse(process.argv[2] ?? '{}') as TrialConfig;
runContainmentTrial(config).then(
  (outcome) => process.stdout.write(`${JSON.stringify(outcome)}\n`),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
