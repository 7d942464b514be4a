import { benchGeneration } from '../../bench/generation';

describe('generation bench', () => {
  test('runs tasks through a rate-limited local endpoint and reports the throughput fraction', async () => {
    const out: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    try {
      await benchGeneration(['--tasks', '60', '--rpm', '12000', '--latency', '5', '--only', 'configured']);
    } finally {
      write.mockRestore();
      process.exitCode = undefined;
    }

    const text = out.join('');
    expect(text).toMatch(/configured\s+60\/60 done in [\d.]+ s/);
    expect(text).toMatch(/throughput [\d.]+% of the rate-limit bound/);
  });
});
