import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatProblem, readPset } from '../../core/pset/read-pset';
import { goodPaperFiles, makeTempPset, removeTempPsets, writeFiles } from '../fixtures/core/temp-pset';
import { rcb } from '../helpers/cli';

const outside = mkdtempSync(join(tmpdir(), 'rcb-outside-'));
const SECRET = join(outside, 'credentials');
writeFileSync(SECRET, '[default]\naws_secret_access_key = not-a-real-secret\n');

afterAll(() => {
  removeTempPsets();
  rmSync(outside, { recursive: true, force: true });
});

/** The good one-paper pset with `link` (relative to the pset root) made a symlink to `target`. */
function psetWithLink(link: string, target: string, yaml?: string): string {
  const files = goodPaperFiles();
  delete files[link];
  const root = makeTempPset(files);
  if (yaml) writeFiles(root, { 'papers.yaml': yaml });
  symlinkSync(target, join(root, link));
  return root;
}

function problemsOf(root: string): string[] {
  return readPset(root, { displayBase: root }).problems.map(formatProblem);
}

describe('a pset cannot reach outside itself', () => {
  it('refuses a context file that is a symlink to /etc/shadow, naming papers.yaml and its line', () => {
    const root = psetWithLink('alpha/utils.py', '/etc/shadow');
    expect(problemsOf(root)).toEqual([
      'papers.yaml:1: paper "alpha": alpha/utils.py is a symlink (to "/etc/shadow"); a pset\'s files must be its own (see docs/security.md)',
    ]);
    expect(readPset(root).pset.papers).toEqual([]);
  });

  it('refuses a paper file symlinked to a credentials file outside the pset', () => {
    const root = psetWithLink('alpha/paper2code_paper.tex', SECRET);
    expect(problemsOf(root)).toEqual([
      expect.stringMatching(/^papers\.yaml:1: paper "alpha": alpha\/paper2code_paper\.tex is a symlink \(to ".*credentials"\)/),
    ]);
  });

  it('refuses a symlinked annotated file, even one pointing inside the pset (the digest would not cover it)', () => {
    const files = goodPaperFiles();
    const root = makeTempPset({ ...files, 'elsewhere/model.py': files['alpha/model.py'] });
    rmSync(join(root, 'alpha/model.py'));
    symlinkSync('../elsewhere/model.py', join(root, 'alpha/model.py'));
    expect(problemsOf(root)).toEqual([expect.stringContaining('alpha/model.py is a symlink (to "../elsewhere/model.py")')]);
  });

  it('refuses a paper folder that is a symlink', () => {
    const files = goodPaperFiles();
    const root = makeTempPset(Object.fromEntries(Object.entries(files).map(([k, v]) => [k.replace(/^alpha\//, 'real/'), v])));
    symlinkSync(join(root, 'real'), join(root, 'alpha'));
    expect(problemsOf(root)).toEqual(['papers.yaml:1: paper "alpha": paper folder alpha is a symlink; a pset\'s files must be its own']);
  });

  it('refuses a paper id that climbs out of the pset and never reads the folder it names', () => {
    // Prepare: a valid paper folder at ../outside/evil relative to the pset.
    const files = goodPaperFiles();
    const parent = makeTempPset({});
    const root = join(parent, 'pset');
    writeFiles(parent, Object.fromEntries(Object.entries(files).map(([k, v]) => [k.replace(/^alpha\//, 'outside/evil/'), v])));
    mkdirSync(root);
    writeFiles(root, { 'papers.yaml': files['papers.yaml'].replace('id: alpha', 'id: ../outside/evil') });
    // Act
    const { pset, problems } = readPset(root, { displayBase: root });
    // Assess
    expect(problems.map(formatProblem)).toEqual([expect.stringMatching(/^papers\.yaml:1: paper id "\.\.\/outside\/evil" is not a plain folder name/)]);
    expect(pset.papers).toEqual([]);
  });

  it.each([
    ['an absolute path', '/etc/passwd', 'is absolute (paths are relative to the paper folder)'],
    ['a ".." segment', '../beta/model.py', 'has a ".." segment (paths stay inside the paper folder)'],
    ['a path inside .git', '.git/model.py', 'is inside .git/, which the pset digest and the cloud bundle leave out'],
  ])('refuses an annotated file given as %s', (_what, path, why) => {
    const root = makeTempPset({ ...goodPaperFiles() });
    writeFiles(root, {
      'papers.yaml': goodPaperFiles()['papers.yaml'].replace('annotated_file_paths: model.py', `annotated_file_paths: ${JSON.stringify(path)}`),
    });
    expect(problemsOf(root)).toEqual([`papers.yaml:1: paper "alpha": annotated_file_paths ${JSON.stringify(path)} ${why}`]);
  });

  it('refuses a papers.yaml that is a symlink', () => {
    const files = goodPaperFiles();
    const root = makeTempPset(files);
    writeFiles(outside, { 'papers.yaml': files['papers.yaml'] });
    rmSync(join(root, 'papers.yaml'));
    symlinkSync(join(outside, 'papers.yaml'), join(root, 'papers.yaml'));
    expect(problemsOf(root)).toEqual(['papers.yaml:0: papers.yaml must be a regular file of the pset, not a symlink or a folder']);
  });

  it('rcb validate reports each case and exits 1', () => {
    // Prepare: two papers, one with a context symlink to /etc/shadow, one whose id climbs out.
    const files = goodPaperFiles();
    const yaml = `${files['papers.yaml']}- id: ../outside/evil\n  annotated_file_paths: model.py\n`;
    const root = psetWithLink('alpha/utils.py', '/etc/shadow', yaml);
    // Act
    const r = rcb(['validate', '--pset', root], { cwd: root });
    // Assess
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('papers.yaml:1: paper "alpha": alpha/utils.py is a symlink (to "/etc/shadow")');
    expect(r.stdout).toContain('papers.yaml:6: paper id "../outside/evil" is not a plain folder name');
  });
});
