/**
 * Captures one output stream of a test process within a size cap: the head and the tail
 * are kept, the middle is cut and the cut is marked. The SPEC 7 error markers are looked
 * for in the whole stream as it passes, so a marker that falls in the cut middle, or
 * across two chunks, is still seen.
 */
import { OFFICIAL_MARKERS } from '../../core/judge';
import type { CappedLog } from '../../core/types';

type Marker = (typeof OFFICIAL_MARKERS)[number];

const MARKER_BYTES = OFFICIAL_MARKERS.map((m) => Buffer.from(m, 'utf8'));
/** Bytes of one chunk kept to find a marker that starts there and ends in the next. */
const CARRY_BYTES = Math.max(...MARKER_BYTES.map((m) => m.length)) - 1;

/** The line that stands for the cut middle of a log. */
export function cutMarkerLine(cutBytes: number): string {
  return `\n[... rcb: ${cutBytes} bytes cut ...]\n`;
}

export class StreamCapture {
  private readonly headCap: number;
  private readonly tailCap: number;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  /** Latest chunks; the oldest is dropped once the rest alone hold `tailCap` bytes. */
  private readonly tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;
  private carry: Buffer = Buffer.alloc(0);
  private readonly seen = new Set<Marker>();

  /** @param capBytes bytes kept in the log: half from the start, half from the end. */
  constructor(capBytes: number) {
    this.headCap = Math.floor(Math.max(0, capBytes) / 2);
    this.tailCap = Math.max(0, capBytes) - this.headCap;
  }

  /** Bytes the process wrote to the stream so far. */
  get totalBytes(): number {
    return this.total;
  }

  write(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    this.scan(chunk);

    let rest = chunk;
    if (this.headBytes < this.headCap) {
      const take = Math.min(this.headCap - this.headBytes, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.tailCap === 0) return;
    this.tail.push(rest);
    this.tailBytes += rest.length;
    while (this.tail.length > 1 && this.tailBytes - this.tail[0].length >= this.tailCap) {
      this.tailBytes -= this.tail[0].length;
      this.tail.shift();
    }
  }

  /** Markers found anywhere in the stream, in OFFICIAL_MARKERS order. */
  markersSeen(): Marker[] {
    return OFFICIAL_MARKERS.filter((m) => this.seen.has(m));
  }

  toCappedLog(): CappedLog {
    const head = Buffer.concat(this.head);
    const allTail = Buffer.concat(this.tail);
    const tail = allTail.subarray(Math.max(0, allTail.length - this.tailCap));
    if (head.length + tail.length >= this.total) {
      return { text: Buffer.concat([head, tail]).toString('utf8'), totalBytes: this.total, truncated: false };
    }
    // Cut on character boundaries so that neither side starts or ends with a broken one.
    const headKept = head.subarray(0, utf8BoundaryBefore(head, head.length));
    const tailKept = tail.subarray(utf8BoundaryAfter(tail, 0));
    const cut = this.total - headKept.length - tailKept.length;
    return {
      text: headKept.toString('utf8') + cutMarkerLine(cut) + tailKept.toString('utf8'),
      totalBytes: this.total,
      truncated: true,
    };
  }

  private scan(chunk: Buffer): void {
    if (this.seen.size < OFFICIAL_MARKERS.length) {
      const boundary = Buffer.concat([this.carry, chunk.subarray(0, CARRY_BYTES)]);
      OFFICIAL_MARKERS.forEach((marker, i) => {
        if (!this.seen.has(marker) && (chunk.includes(MARKER_BYTES[i]) || boundary.includes(MARKER_BYTES[i]))) {
          this.seen.add(marker);
        }
      });
    }
    const joined = chunk.length >= CARRY_BYTES ? chunk : Buffer.concat([this.carry, chunk]);
    this.carry = Buffer.from(joined.subarray(Math.max(0, joined.length - CARRY_BYTES)));
  }
}

const isContinuation = (byte: number): boolean => (byte & 0xc0) === 0x80;

/** Largest index <= end at which a UTF-8 character starts (or the buffer ends whole). */
function utf8BoundaryBefore(buf: Buffer, end: number): number {
  let i = end;
  // Step back over at most three continuation bytes to the lead byte of the last character.
  while (i > 0 && end - i < 4 && isContinuation(buf[i - 1])) i--;
  if (i === 0) return end;
  const lead = buf[i - 1];
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return end - (i - 1) >= length ? end : i - 1;
}

/** Smallest index >= start that is not in the middle of a UTF-8 character. */
function utf8BoundaryAfter(buf: Buffer, start: number): number {
  let i = start;
  while (i < buf.length && i - start < 3 && isContinuation(buf[i])) i++;
  return i;
}
