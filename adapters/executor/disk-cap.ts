/**
 * The disk a test may fill: RLIMIT_FSIZE bounds each file (maxFileMb), not their sum, and
 * neither sandbox has a quota to give (no loop device or tmpfs mount without privileges in
 * the uid sandbox; bwrap's sized tmpfs would cost the workspace in memory). So the test's
 * writable folders (its workspace; the slot home in the uid sandbox) are measured while it
 * runs (every DISK_POLL_MS, sooner near the cap), in blocks actually allocated (a sparse file costs what it holds;
 * hard links once), and the test is killed once they pass `limits.maxDiskMb`: killedFor
 * 'disk', failure class `resource` (docs/security.md, "Disk").
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * How often the folders are measured: first after DISK_POLL_MIN_MS, then twice as long each time
 * up to DISK_POLL_MS while the writes stay far from the cap, and sooner as they near it (half
 * the time the last rate would take to reach it, DISK_POLL_MIN_MS at least).
 */
export const DISK_POLL_MS = 200;
export const DISK_POLL_MIN_MS = 10;

/** Bytes allocated under `dirs` (st_blocks x 512), each inode once, not following links. */
export function allocatedBytes(dirs: readonly string[]): number {
  const seen = new Set<string>();
  let total = 0;
  const visit = (path: string): void => {
    let stat;
    try {
      stat = lstatSync(path, { bigint: false });
    } catch {
      return; // gone meanwhile
    }
    const id = `${stat.dev}:${stat.ino}`;
    if (seen.has(id)) return;
    seen.add(id);
    total += stat.blocks * 512;
    if (!stat.isDirectory()) return;
    let names: string[];
    try {
      names = readdirSync(path);
    } catch {
      return;
    }
    for (const name of names) visit(join(path, name));
  };
  for (const dir of dirs) visit(dir);
  return total;
}

/**
 * Measures `dirs` every DISK_POLL_MS from `start()` until `stop()`, and calls `onOver` once
 * when what was added since `start()` passes `maxBytes` (the paper's own files do not count).
 */
export class DiskCap {
  private timer: NodeJS.Timeout | null = null;
  private base = 0;
  private last = { added: 0, at: 0 };
  private interval = DISK_POLL_MIN_MS;
  /** The most added at any measurement, bytes. */
  peakBytes = 0;

  constructor(
    private readonly dirs: readonly string[],
    private readonly maxBytes: number,
    private readonly onOver: () => void,
  ) {}

  start(): this {
    this.base = allocatedBytes(this.dirs);
    this.last = { added: 0, at: Date.now() };
    this.schedule(DISK_POLL_MIN_MS);
    return this;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => this.measure(), ms);
    this.timer.unref();
  }

  private measure(): void {
    const added = allocatedBytes(this.dirs) - this.base;
    const at = Date.now();
    this.peakBytes = Math.max(this.peakBytes, added);
    if (added > this.maxBytes) {
      this.timer = null;
      this.onOver();
      return;
    }
    const rate = (added - this.last.added) / Math.max(1, at - this.last.at);
    this.last = { added, at };
    const untilCap = rate > 0 ? (this.maxBytes - added) / rate / 2 : DISK_POLL_MS;
    // From DISK_POLL_MIN_MS, doubling while the writes stay far from the cap.
    this.interval = Math.min(DISK_POLL_MS, this.interval * 2, Math.max(DISK_POLL_MIN_MS, untilCap));
    this.schedule(this.interval);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
