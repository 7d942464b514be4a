/**
 * Reading the answer (SPEC 6): the content of the last fenced block opened by ```python
 * and a newline and closed by ```, verbatim. No block: the completion is empty.
 */
const PYTHON_FENCE = /```python\n([\s\S]*?)```/g;

export function extractCompletion(answer: string): string {
  let last: string | null = null;
  for (const m of answer.matchAll(PYTHON_FENCE)) last = m[1];
  return last ?? '';
}

/** Whether the answer has a python block at all (an empty block counts as having one). */
export function hasPythonBlock(answer: string): boolean {
  PYTHON_FENCE.lastIndex = 0;
  return /```python\n[\s\S]*?```/.test(answer);
}
