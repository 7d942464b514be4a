/**
 * A text as an ECS tag value. RunTask refuses the whole task when a tag value holds anything
 * but letters, numbers, spaces and `_ . : / = + - @`, or is longer than 256 characters
 * (ECS `Tag.value`); a paper id goes into the shard task's `rcb:shard` tag
 * (infra/shard-run-task.ts), and a paper id may hold other characters. Each other character
 * becomes `_`; a value changed so, or cut to length, ends in `+` and 8 hex digits of the
 * original's SHA-256, so two papers never share a tag (docs/cloud.md, "Tags").
 */
import { createHash } from 'node:crypto';

/** ECS's longest tag value. */
export const ECS_TAG_VALUE_MAX = 256;
const NOT_ALLOWED = /[^\p{L}\p{Z}\p{N}_.:/=+\-@]/gu;

export function ecsTagValue(text: string): string {
  const cleaned = text.replace(NOT_ALLOWED, '_');
  if (cleaned === text && [...text].length <= ECS_TAG_VALUE_MAX && !text.includes('+')) return text;
  const suffix = `+${createHash('sha256').update(text).digest('hex').slice(0, 8)}`;
  return [...cleaned].slice(0, ECS_TAG_VALUE_MAX - suffix.length).join('') + suffix;
}
