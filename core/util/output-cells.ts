/**
 * Cells of a report that a spreadsheet or a markdown renderer reads. Model ids, paper names
 * and notes come from outside rcb (a models file, a pset, a replay file), so a cell must not
 * become a formula or markup there (docs/security.md, "Output that cannot act").
 */
import { oneLineText } from './terminal-text';

const PLAIN_NUMBER = /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i;
// OWASP's CSV injection rule: these first characters make a spreadsheet read a formula.
const FORMULA_START = new Set(['=', '+', '-', '@', '\t', '\r']);

/** A CSV cell: a leading formula character neutralised with `'` (numbers, and a lone `-` for none, stay as they are), then quoted if needed. */
export function csvCell(text: string): string {
  const cell = FORMULA_START.has(text.charAt(0)) && !PLAIN_NUMBER.test(text) && text !== '-' ? `'${text}` : text;
  return /[",\n\r]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell;
}

const HTML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/**
 * Text inside a markdown line or table cell: HTML's `< > &` as entities (no tag or autolink
 * forms), the inline markdown specials backslash-escaped (no code span, link, image, cell
 * break, strike or `*` emphasis), and control characters and newlines escaped (one cell stays
 * one line). `_` is left alone: model ids are full of it, and within a word it emphasises
 * nothing; at worst a name is shown in italics.
 */
export function markdownText(text: string): string {
  // rcb's own figures and intervals ("~38.40", "[33.05, 43.74]") can form no markup: kept readable.
  if (/^[~\d.,\s[\]%/-]*$/.test(text)) return text;
  return oneLineText(text)
    .replace(/[\\`*[\]|]/g, (c) => `\\${c}`)
    .replace(/[&<>]/g, (c) => HTML_ENTITIES[c]);
}
