/**
 * Progress on a terminal: a redrawn bar per phase on a TTY, plain lines otherwise (CI logs,
 * pipes), at most one line per phase every few seconds plus the final count.
 */
import type { Progress } from '../../core/run/progress';
import { oneLineText, terminalText, writeRaw } from '../../core/util/terminal-text';

interface Phase {
  total: number;
  done: number;
  started: number;
  lastLine: number;
}

export class TerminalProgress implements Progress {
  private readonly phases = new Map<string, Phase>();
  private drawn = false;
  private silent = false;
  private lastDraw = 0;

  constructor(
    private readonly out: NodeJS.WriteStream = process.stderr,
    private readonly tty: boolean = !!process.stderr.isTTY,
    private readonly lineEveryMs = 5000,
  ) {}

  /**
   * Print nothing more: after a run is stopped at once, the killed tests' executor notes
   * are expected and would bury the one line that matters.
   */
  silence(): void {
    if (this.tty && this.drawn) this.out.write('\n');
    this.silent = true;
  }

  start(phase: string, total: number): void {
    this.phases.set(phase, { total, done: 0, started: Date.now(), lastLine: 0 });
    this.render(phase);
  }

  advance(phase: string, n = 1): void {
    const p = this.phases.get(phase);
    if (!p || n === 0) return;
    p.done += n;
    this.render(phase);
  }

  end(phase: string): void {
    const p = this.phases.get(phase);
    if (!p) return;
    this.render(phase, true);
  }

  note(message: string): void {
    if (this.silent) return;
    if (this.tty && this.drawn) writeRaw(this.out, '\r\x1b[2K');
    this.out.write(`${terminalText(message)}\n`);
    this.drawn = false;
    if (this.tty) this.draw();
  }

  private describe(name: string, p: Phase): string {
    const secs = (Date.now() - p.started) / 1000;
    const rate = p.done && secs > 0 ? p.done / secs : 0;
    const eta = rate && p.done < p.total ? ` eta ${Math.ceil((p.total - p.done) / rate)}s` : '';
    return `${oneLineText(name)} ${p.done}/${p.total}${eta}`;
  }

  private draw(): void {
    const parts: string[] = [];
    for (const [name, p] of this.phases) {
      const width = 20;
      const filled = p.total ? Math.round((width * Math.min(p.done, p.total)) / p.total) : width;
      const line = this.describe(name, p);
      const label = oneLineText(name);
      parts.push(`${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${line.slice(label.length + 1)}`);
    }
    writeRaw(this.out, `\r\x1b[2K${parts.join('  ')}`);
    this.drawn = true;
  }

  private render(phase: string, final = false): void {
    if (this.silent) return;
    const p = this.phases.get(phase)!;
    if (this.tty) {
      // Redraw at most ten times a second: a fast phase would otherwise flood the terminal.
      const now = Date.now();
      if (!final && now - this.lastDraw < 100) return;
      this.lastDraw = now;
      this.draw();
      if (final && [...this.phases.values()].every((q) => q.done >= q.total)) {
        this.out.write('\n');
        this.drawn = false;
      }
      return;
    }
    // Plain lines: the start, then at most one every lineEveryMs, then the final count once.
    const now = Date.now();
    if (final || p.lastLine === 0 || now - p.lastLine >= this.lineEveryMs) {
      if (p.lastLine === -1) return;
      p.lastLine = final ? -1 : now;
      this.out.write(`${this.describe(phase, p)}\n`);
    }
  }
}
