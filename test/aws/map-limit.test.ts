import { mapLimit } from '../../adapters/aws/map-limit';

describe('mapLimit', () => {
  it('keeps at most `limit` calls in flight and the results in input order', async () => {
    let inFlight = 0;
    let peak = 0;
    const items = Array.from({ length: 20 }, (_, i) => i);

    const results = await mapLimit(items, 3, async (n) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((resolve) => setTimeout(resolve, (n * 7) % 5));
      inFlight--;
      return n * 2;
    });

    expect(peak).toBe(3);
    expect(results).toEqual(items.map((n) => n * 2));
  });

  it('rejects with the first failure and starts no further calls', async () => {
    const started: number[] = [];

    const run = mapLimit([0, 1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n);
      if (n === 1) throw new Error('boom at 1');
      await new Promise((resolve) => setTimeout(resolve, 5));
      return n;
    });

    await expect(run).rejects.toThrow('boom at 1');
    expect(started).toEqual([0, 1]);
  });
});
