/**
 * Worker slots of an executor. A slot is held for the whole run of one candidate and
 * fixes the user it runs as, so no two concurrent candidates share a user.
 */
export class SlotPool {
  private readonly free: number[];
  private readonly waiting: ((slot: number) => void)[] = [];

  constructor(size: number) {
    // Popped from the end: slot 0 first.
    this.free = Array.from({ length: size }, (_, i) => size - 1 - i);
  }

  acquire(): Promise<number> {
    const slot = this.free.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(slot: number): void {
    const next = this.waiting.shift();
    if (next) next(slot);
    else this.free.push(slot);
  }
}
