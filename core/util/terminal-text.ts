/**
 * Text from a run (test output, completions, model ids, paper names) is written by model code
 * or by whoever wrote a pset or a models file. Printed raw, its escape sequences act on the
 * reader's terminal: OSC 52 writes the clipboard, OSC 0 sets the title, CSI clears the screen,
 * a lone CR or a bidi override hides what precedes it. Every such character is shown as an
 * escape instead (docs/security.md, "Output that cannot act").
 */

/** C0 controls, DEL, C1 controls, and the Unicode bidi overrides and isolates. */
export function isControlCode(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}

export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (isControlCode(text.charCodeAt(i))) return true;
  return false;
}

/** `\uNNNN`: readable in text, and the same character again inside a JSON string. */
function escapeCode(code: number): string {
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every control character shown as `\uNNNN`, except
 * newline and tab, which lay out multi-line text and act on nothing. CRLF becomes LF.
 */
export function terminalText(text: string): string {
  if (!hasControlCharacter(text)) return text;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x0d && text.charCodeAt(i + 1) === 0x0a) continue;
    out += code === 0x0a || code === 0x09 || !isControlCode(code) ? text[i] : escapeCode(code);
  }
  return out;
}

/** The same, with newline and tab escaped too: for a name shown inside one line of a table. */
export function oneLineText(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    out += isControlCode(code) ? escapeCode(code) : text[i];
  }
  return out;
}

/**
 * JSON text with DEL, the C1 controls and the bidi controls escaped as `\uNNNN` as well
 * (JSON.stringify escapes only C0). Still the same JSON: those characters can only occur
 * inside strings, where the escape means the same character.
 */
export function terminalSafeJson(json: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < json.length; i++) {
    const code = json.charCodeAt(i);
    if (code < 0x7f || !isControlCode(code)) continue;
    out += `${json.slice(from, i)}${escapeCode(code)}`;
    from = i + 1;
  }
  return from === 0 ? json : out + json.slice(from);
}

const RAW_WRITE = Symbol.for('rcb.rawWrite');
type Writable = NodeJS.WritableStream & { [RAW_WRITE]?: (text: string) => boolean };

/**
 * Make every string written to `stream` pass through `terminalText`, so no command, present or
 * future, prints a run's escape sequences (rcb's own, as a progress bar's redraw, go through
 * `writeRaw`). Buffers are left as they are: rcb writes none to a terminal.
 */
export function guardStream(stream: NodeJS.WritableStream): void {
  const target = stream as Writable;
  if (target[RAW_WRITE]) return;
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  target[RAW_WRITE] = (text: string) => write(text);
  target.write = ((chunk: unknown, ...rest: unknown[]) => write(typeof chunk === 'string' ? terminalText(chunk) : chunk, ...rest)) as typeof stream.write;
}

/** Write rcb's own control sequences (already safe) past `guardStream`. */
export function writeRaw(stream: NodeJS.WritableStream, text: string): void {
  const raw = (stream as Writable)[RAW_WRITE];
  if (raw) raw(text);
  else stream.write(text);
}
