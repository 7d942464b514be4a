import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outputFolder, writeFileAtomic } from '../../app/output-files';

const dir = mkdtempSync(join(tmpdir(), 'rcb-output-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomic', () => {
  it('replaces an existing file whole and leaves no temporary file', () => {
    const path = join(dir, 'a.json');
    writeFileSync(path, 'old\n');
    writeFileAtomic(path, 'new\n');
    expect(readFileSync(path, 'utf8')).toBe('new\n');
    expect(readdirSync(dir)).toEqual(['a.json']);
  });

  it('removes a link planted at its temporary name instead of writing through it', () => {
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'keep\n');
    symlinkSync(victim, join(dir, `.b.json.${process.pid}.tmp`));
    writeFileAtomic(join(dir, 'b.json'), 'log\n');
    expect(readFileSync(victim, 'utf8')).toBe('keep\n');
    expect(readFileSync(join(dir, 'b.json'), 'utf8')).toBe('log\n');
  });

  it('refuses a folder given as the folder to write into when it is a file', () => {
    const file = join(dir, 'plain');
    writeFileSync(file, '');
    expect(() => outputFolder(file)).toThrow(`--out ${file}: exists and is not a folder`);
  });
});
