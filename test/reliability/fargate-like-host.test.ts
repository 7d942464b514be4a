/**
 * The bad-input and crash suites again, with every rcb process on the Fargate-like host
 * (test/security/support/fargate-like-host.ts), where bubblewrap cannot start and tests
 * run in the uid sandbox (RCB_SANDBOX=uid): the same rejections, and runs killed with
 * SIGKILL (the whole host) resume to the same results with no model call repeated.
 */
import { findBwrap } from '../../adapters/executor/sandbox';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';

if (runningAsRoot() && findBwrap() !== null) {
  process.env.RCB_TEST_HOST = 'fargate-like';
  require('./bad-inputs.test');
  require('./crash-recovery.test');
} else {
  it.skip('needs root and bubblewrap to make the Fargate-like host', () => undefined);
}
