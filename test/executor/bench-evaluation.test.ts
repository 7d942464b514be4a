/**
 * The evaluation bench on the bundled example: every configuration, the floor harness
 * included, runs the oracle answers and agrees on every verdict, and the table has each
 * configuration's ratios to the original loop and to the floor.
 */
import { benchEvaluation, median } from '../../bench/evaluation';

jest.setTimeout(300_000);

describe('evaluation bench', () => {
  it('runs the original loop, cold, warm 1 and N, the whole rcb run and the floor on the same answers, with the same verdicts', async () => {
    // Prepare
    const out: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });

    // Act
    try {
      await benchEvaluation(['--rounds', '1', '--jobs', '2']);
    } finally {
      write.mockRestore();
    }
    const exitCode = process.exitCode;
    process.exitCode = undefined;

    // Assess
    const text = out.join('');
    expect(exitCode).toBeUndefined();
    expect(text).toContain('verdicts identical across configurations and rounds: yes');
    for (const name of ['original loop', 'rcb cold', 'rcb warm, bwrap, 1 job', 'rcb warm, bwrap, 2 job(s)', 'whole rcb run --model oracle', 'floor']) {
      // name | wall | spread | original / it | it / floor | pass: every cell filled, every test passing.
      expect(text).toMatch(
        new RegExp(`\\| ${name.replace(/[()]/g, '\\$&')}[^|]* \\| [\\d.]+ \\| [\\d.]+-[\\d.]+ \\| [\\d.]+x \\| [\\d.]+x \\| (\\d+)/\\1 \\|`),
      );
    }
    expect(text).toMatch(/floor preloads \d+ modules/);
    // Where the time goes: the floor's start-up and, per warm configuration, each step.
    expect(text).toMatch(/floor: start-up \(imports before the first fork\) \d+/);
    expect(text).not.toMatch(/^cold: wall/m);
    for (const config of ['warm1', 'warmN']) {
      expect(text).toMatch(
        new RegExp(
          `${config}: wall \\d+; host set-up done at \\d+, worker start \\d+ each \\(sandbox and interpreter start -?\\d+, server imports \\d+, preload \\d+, index and gc \\d+; \\d+ started.*per test: test process \\d+, around it in the server \\(fork, relay, checks\\) \\d+, workspace fill \\d+, tamper check \\d+, clean-up \\d+`,
        ),
      );
    }
  });

  it('takes the median of an even number of rounds as the mean of the middle two', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5, 1, 3])).toBe(3);
  });
});
