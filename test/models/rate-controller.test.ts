import { RateController, RateLanes, type RatePermit } from '../../core/rate';
import { settle, VirtualClock } from './support/virtual-clock';

/** Start `n` acquisitions and collect the permits as they are granted. */
function acquireMany(rc: RateController, n: number, tokens = 0): RatePermit[] {
  const granted: RatePermit[] = [];
  for (let i = 0; i < n; i++) void rc.acquire(tokens).then((p) => granted.push(p));
  return granted;
}

describe('rate controller', () => {
  test('never lets more than max_in_flight calls run at once under concurrency', async () => {
    const rc = new RateController({ limits: { maxInFlight: 4 } });
    let running = 0;
    let peak = 0;

    await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const permit = await rc.acquire();
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, i % 5));
        running--;
        permit.released();
      }),
    );

    expect(peak).toBe(4);
    expect(rc.snapshot()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  test('spaces requests at the RPM rate after a burst of one second', async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: { rpm: 600, maxInFlight: 100 }, clock });

    const granted = acquireMany(rc, 25);
    granted.forEach((p) => p.released());
    await settle();
    expect(granted).toHaveLength(10);

    await clock.advance(100);
    expect(granted).toHaveLength(11);

    await clock.advance(1400);
    expect(granted).toHaveLength(25);
  });

  test('charges TPM at admission and refunds what the call did not use', async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: { tpm: 60_000 }, clock }); // 1000 tokens a second, burst 1000

    const first = await rc.acquire(800);
    first.succeeded(100); // used 100 of the 800 charged
    const granted = acquireMany(rc, 1, 900);
    await settle();

    expect(granted).toHaveLength(1);
  });

  test('makes a request wait until the tokens it needs have refilled', async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: { tpm: 60_000 }, clock });

    (await rc.acquire(600)).succeeded();
    const granted = acquireMany(rc, 1, 600);
    await settle();
    expect(granted).toHaveLength(0);

    await clock.advance(199);
    expect(granted).toHaveLength(0);
    await clock.advance(1);
    expect(granted).toHaveLength(1);
  });

  test('admits a request larger than the bucket once the bucket is full', async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: { tpm: 60_000 }, clock });

    (await rc.acquire(500)).succeeded();
    const big = acquireMany(rc, 1, 5000);
    await clock.advance(499);
    expect(big).toHaveLength(0);
    await clock.advance(1);
    expect(big).toHaveLength(1);

    // It drove the bucket into debt: the next request waits for that to be repaid.
    const next = acquireMany(rc, 1, 1);
    await clock.advance(3999);
    expect(next).toHaveLength(0);
    await clock.advance(2);
    expect(next).toHaveLength(1);
  });

  test("pauses the lane for the server's Retry-After", async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: {}, clock });

    rc.onRateLimited(2000);
    const granted = acquireMany(rc, 3);
    await clock.advance(1999);
    expect(granted).toHaveLength(0);

    await clock.advance(1);
    expect(granted).toHaveLength(3);
  });

  test('halves concurrency on repeated 429s, once per burst, and recovers one step per quiet interval', async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: { maxInFlight: 8 }, clock });
    const limit = (): number => rc.snapshot().limit;
    const burst = await Promise.all(Array.from({ length: 8 }, () => rc.acquire()));

    burst[0].rateLimited();
    expect(limit()).toBe(8); // a single 429 only pauses
    burst[1].rateLimited();
    expect(limit()).toBe(4);
    burst.slice(2, 5).forEach((p) => p.rateLimited());
    expect(limit()).toBe(4); // the same burst: these calls were admitted before the cut
    burst.slice(5).forEach((p) => p.released());

    const after = await Promise.all([rc.acquire(), rc.acquire()]);
    after.forEach((p) => p.rateLimited());
    expect(limit()).toBe(2); // 429s from calls admitted after the cut cut again

    await clock.advance(9999);
    (await rc.acquire()).succeeded();
    expect(limit()).toBe(2); // not quiet long enough
    await clock.advance(1);
    (await rc.acquire()).succeeded();
    expect(limit()).toBe(3);
    (await rc.acquire()).succeeded();
    expect(limit()).toBe(3); // one step per interval
    await clock.advance(10_000);
    (await rc.acquire()).succeeded();
    expect(limit()).toBe(4);
    expect(rc.snapshot().cuts).toBe(2);
  });

  test('a 429 restarts the quiet interval before any recovery', async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: { maxInFlight: 8 }, clock });
    rc.onRateLimited();
    rc.onRateLimited(); // 8 -> 4

    await clock.advance(8000);
    rc.onRateLimited(); // a lone 429: no cut, but no quiet either
    await clock.advance(5000);
    (await rc.acquire()).succeeded();
    expect(rc.snapshot().limit).toBe(4);

    await clock.advance(5000);
    (await rc.acquire()).succeeded();
    expect(rc.snapshot().limit).toBe(5);
  });

  test('a permit ends once: a second report is ignored', async () => {
    const rc = new RateController({ limits: { maxInFlight: 1 } });
    const p = await rc.acquire();

    p.succeeded();
    p.released();
    p.rateLimited(1000);

    expect(rc.snapshot()).toMatchObject({ inFlight: 0, pausedUntil: 0 });
  });

  test('never cuts below one call in flight', async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: { maxInFlight: 2 }, clock });

    for (let i = 0; i < 5; i++) {
      rc.onRateLimited();
      rc.onRateLimited();
      await clock.advance(1000);
    }

    expect(rc.snapshot().limit).toBe(1);
  });

  test('a cut limit holds new calls back until enough running calls have ended', async () => {
    const clock = new VirtualClock();
    const rc = new RateController({ limits: { maxInFlight: 8 }, clock });
    const running = acquireMany(rc, 8);
    await settle();
    rc.onRateLimited();
    rc.onRateLimited(); // limit 8 -> 4
    const waiting = acquireMany(rc, 3);

    running.slice(0, 4).forEach((p) => p.released());
    await settle();
    expect(waiting).toHaveLength(0); // 4 still running = the new limit

    running[4].released();
    await settle();
    expect(waiting).toHaveLength(1);
  });

  test('an aborted wait leaves the queue and rejects', async () => {
    const rc = new RateController({ limits: { maxInFlight: 1 } });
    const held = await rc.acquire();
    const abort = new AbortController();

    const waiting = rc.acquire(0, abort.signal);
    abort.abort(new Error('run cancelled'));

    await expect(waiting).rejects.toThrow('run cancelled');
    expect(rc.snapshot().queued).toBe(0);
    held.released();
  });

  test('lanes with the same key share one controller', () => {
    const lanes = new RateLanes();

    const a = lanes.lane('openai|gpt-5.4', { maxInFlight: 3 });
    const b = lanes.lane('openai|gpt-5.4', { maxInFlight: 99 });

    expect(b).toBe(a);
    expect(a.snapshot().maxInFlight).toBe(3);
    expect(lanes.lane('anthropic|claude', {})).not.toBe(a);
  });
});
