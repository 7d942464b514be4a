import { benchSweep } from '../../bench/sweep';

describe('sweep bench', () => {
  it('runs both modes and prints the batch/interactive ratios', async () => {
    const out: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    try {
      await benchSweep(['--samples', '1', '--papers', 'adamlite']);
    } finally {
      write.mockRestore();
    }
    const text = out.join('');
    expect(text).toMatch(/^interactive\s+\$\d/m);
    expect(text).toMatch(/^batch\s+\$\d/m);
    // Every registry model of the bench has batch prices at half its interactive ones.
    expect(text).toMatch(/batch \/ interactive: recorded spend 0\.500, registry estimate 0\.\d{3}, HTTP requests 0\.\d{3}, state transitions 0\.\d{3}/);
  }, 120_000);
});
