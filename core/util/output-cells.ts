/**
 * Cells of a report that a spreadsheet or a markdown renderer reads. Model ids, paper names
 * and notes come from outside rcb (a models file, a pset, a replay file), so a cell must not
 * become a formula or markup there (docs/security.md, "Output that cannot act").
 */
import { oneLineText } from './terminal-text';

const PLAIN_NUMBER = /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i;
// OWASP's CSV injection rule: these first characters make a spreadsheet read a formula.
const FORMULA_START = new Set(['=', '+', '-', '@', '\t', '\r']);

/** A CSV cell: a leading formula character neutralised with `'` (numbers stay numbers), then quoted if needed. */
export function csvCell(text: string): string {
  const cell = FORMULA_START.has(text.charAt(0)) && !PLAIN_NUMBER.test(text) ? `'${text}` : text;
  return /[",\n\r]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell;
}

const HTML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/**
 * Text inside a markdown line or table cell: HTML's `< > &` as entities (no tag or autolink
 * forms), the inline markdown specials backslash-escaped (no emphasis, code span, link or
 * cell break), and control characters and newlines escaped (one cell stays one line).
 */
export function markdownText(text: string): string {
  return oneLineText(text)
    .replace(/[\\`*_[\]|~#!]/g, (c) => `\\${c}`)
    .replace(/[&<>]/g, (c) => HTML_ENTITIES[c]);
}
