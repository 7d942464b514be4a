/**
 * The CI workflow of docs/ci/github-actions.yml: it parses, assumes its role through OIDC
 * (id-token: write, no stored key), and every rcb command it runs is one this CLI accepts, with
 * the flags it gives (a renamed flag fails here, not in a team's pipeline).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { parse } from 'yaml';
import { registerCloudCommands } from '../../bin/commands/cloud/register-cloud-commands';
import { REPO } from '../helpers/cli';

const workflow = parse(readFileSync(join(REPO, 'docs', 'ci', 'github-actions.yml'), 'utf8')) as {
  permissions: Record<string, string>;
  jobs: Record<string, { steps: Array<{ uses?: string; run?: string; with?: Record<string, unknown> }> }>;
};
const steps = Object.values(workflow.jobs).flatMap((j) => j.steps);

/** The rcb invocations of the steps' scripts, as argument lists (shell expansions replaced by a word). */
function rcbCommands(): string[][] {
  return steps
    .flatMap((s) => (s.run ?? '').split('\n'))
    .map((line) => /(?:^|\$\()\s*rcb (cloud [^)]*?)(?:\)|>>|$)/.exec(line.trim())?.[1])
    .filter((c): c is string => !!c)
    .map((c) =>
      c
        .replace(/"\$\{\{[^}]*\}\}"|"\$[A-Z_]+"/g, 'X')
        .trim()
        .split(/\s+/),
    );
}

describe('the documented CI workflow', () => {
  it('assumes a role through OIDC and stores no AWS key', () => {
    expect(workflow.permissions['id-token']).toBe('write');
    const assume = steps.find((s) => s.uses?.startsWith('aws-actions/configure-aws-credentials'));
    expect(assume?.with?.['role-to-assume']).toMatch(/^arn:aws:iam::\d{12}:role\//);
    expect(JSON.stringify(workflow)).not.toMatch(/aws-access-key-id|aws-secret-access-key/);
  });

  it('runs rcb cloud run --detach, then rcb cloud status --wait, with flags this CLI accepts', () => {
    const commands = rcbCommands();
    expect(commands.map((c) => c.slice(0, 2).join(' '))).toEqual(['cloud run', 'cloud status', 'cloud results']);
    expect(commands[0]).toContain('--detach');
    expect(commands[1]).toContain('--wait');
    for (const args of commands) {
      const program = new Command().exitOverride();
      let parsed = false;
      registerCloudCommands(program, () => undefined);
      // Each command's action replaced: only the parse is checked.
      for (const c of program.commands.flatMap((p) => p.commands)) {
        c.exitOverride().action(() => void (parsed = true));
      }
      program.parse(['node', 'rcb', ...args]);
      expect([args.join(' '), parsed]).toEqual([args.join(' '), true]);
    }
  });
});
