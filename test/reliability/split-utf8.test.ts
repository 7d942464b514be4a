/**
 * A chunk boundary can fall inside a UTF-8 character: a request body sent in two writes, or a
 * child's output flushed in two, must still decode to the text that was sent. Decoding chunk by
 * chunk turns each half into U+FFFD; the fake model endpoint then no longer recognised a paper's
 * prompt (the papers' text has non-ASCII characters), a failure that came and went with how the
 * kernel split the bytes (CI, 3 December 2026).
 */
import { request } from 'node:http';
import { writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { FakeChatEndpoint } from './fake-chat-endpoint';
import { runEngine } from '../../bin/commands/cloud/container-engine';
import { loadPset, readPaperText } from '../../core/pset/read-pset';
import { buildPrompt, loadTemplate } from '../../core/prompt/template';
import { PSET_MINI, REPO, tempDir } from '../helpers/cli';

/** Splits `text`'s bytes in the middle of its first multi-byte character. */
function splitInsideCharacter(text: string): [Buffer, Buffer] {
  const bytes = Buffer.from(text, 'utf8');
  const at = bytes.findIndex((b) => b >= 0xc0);
  expect(at).toBeGreaterThanOrEqual(0);
  return [bytes.subarray(0, at + 1), bytes.subarray(at + 1)];
}

describe('text split inside a UTF-8 character', () => {
  it("the fake endpoint recognises a paper's prompt sent in two writes split inside a character", async () => {
    const pset = loadPset(PSET_MINI);
    const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
    const paper = pset.papers.find((p) => /[^\p{ASCII}]/u.test(readPaperText(p)))!;
    expect(paper).toBeDefined();
    const prompt = buildPrompt(template, paper, paper.snippets[0], true).text;
    const endpoint = new FakeChatEndpoint(pset, template, true);
    await endpoint.start();
    try {
      const [head, tail] = splitInsideCharacter(JSON.stringify({ model: 'fake', messages: [{ role: 'user', content: prompt }] }));
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${endpoint.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.write(head);
        // The second half after the first has gone out: the server reads them as two chunks.
        setTimeout(() => req.end(tail), 50);
      });
      expect([status, endpoint.unknownPrompts]).toEqual([200, 0]);
    } finally {
      await endpoint.close();
    }
  });

  it("a container engine's output flushed in two writes split inside a character is read whole", async () => {
    const dir = tempDir('rcb-split-utf8-');
    const engine = join(dir, 'engine');
    // Writes "é" (0xc3 0xa9) one byte at a time, flushing and pausing in between, on both streams.
    writeFileSync(
      engine,
      `#!/usr/bin/env python3\nimport sys, time\nfor s in (sys.stdout, sys.stderr):\n    s.buffer.write(b"caf\\xc3"); s.flush(); time.sleep(0.05); s.buffer.write(b"\\xa9\\n"); s.flush()\n`,
    );
    chmodSync(engine, 0o755);
    const seen: string[] = [];
    const r = await runEngine(engine, ['version'], process.env, undefined, (t) => seen.push(t));
    expect([r.code, r.stdout, r.stderr]).toEqual([0, 'café\n', 'café\n']);
    expect(seen.join('')).toBe('café\ncafé\n');
  });
});
