import type { Clock } from '../../../core/rate';

/** A clock that moves only when told to, firing due sleeps in order. */
export class VirtualClock implements Clock {
  private t = 0;
  private timers: Array<{ due: number; resolve: () => void }> = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = { due: this.t + Math.max(0, ms), resolve };
      this.timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.timers = this.timers.filter((x) => x !== timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Move time forward by `ms`, firing every sleep that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    await settle();
    for (;;) {
      const next = this.timers.filter((x) => x.due <= end).sort((a, b) => a.due - b.due)[0];
      if (!next) break;
      this.timers = this.timers.filter((x) => x !== next);
      this.t = Math.max(this.t, next.due);
      next.resolve();
      await settle();
    }
    this.t = end;
    await settle();
  }
}

/** Let pending promise callbacks run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
