/**
 * cdk-nag, as bin/app.ts applies it: the AwsSolutions and Serverless packs over the stack
 * built from cdk.json context. Any finding that is not acknowledged fails the test, and so
 * does an acknowledgement without a real reason.
 */
import { App } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { configFromContext } from '../../infra/config';
import { applyNagPacks } from '../../infra/nag-packs';
import { RcbStack, stackPropsFromConfig } from '../../infra/rcb-stack';
import { NO_BUNDLING, cdkJsonContext, oncePerProps } from './helpers';

const NAG_RULE = Match.stringLikeRegexp('^(AwsSolutions|Serverless)-');

/** The stack of a configuration with the packs applied, built once for the file's tests of it (errors, warnings, reasons). */
const nagged = oncePerProps((extraContext: Record<string, unknown>) => {
  // Built-in CloudFormation validation stays on here: cdk.json turns its findings into errors.
  const app = new App({ context: { ...cdkJsonContext(), ...NO_BUNDLING, ...extraContext } });
  const config = configFromContext(app.node);
  const stack = new RcbStack(app, config.stackName, stackPropsFromConfig(config));
  applyNagPacks(app);
  return { app, stack, annotations: Annotations.fromStack(stack) };
}, {});

function messages(findings: ReturnType<Annotations['findError']>): string[] {
  return findings.map((f) => `${f.id}: ${String(f.entry.data).split(':')[0]}`);
}

describe('cdk-nag packs', () => {
  const configurations: Array<[string, Record<string, unknown>]> = [
    ['the cdk.json configuration', {}],
    ['with an alarm e-mail topic', { 'rcb:alarmEmail': 'ops@example.org' }],
    ['parked (no interface endpoints), ARM64', { 'rcb:interfaceEndpoints': 'false', 'rcb:cpuArchitecture': 'ARM64' }],
    ['with the DNS firewall', { 'rcb:dnsFirewall': 'true' }],
  ];

  it.each(configurations)('report no unacknowledged error for %s', (_name, context) => {
    const { annotations } = nagged(context);
    expect(messages(annotations.findError('*', NAG_RULE))).toEqual([]);
  });

  it.each(configurations)('report no unacknowledged warning for %s', (_name, context) => {
    const { annotations } = nagged(context);
    expect(messages(annotations.findWarning('*', NAG_RULE))).toEqual([]);
  });

  it('gives every acknowledgement a reason of at least a sentence', () => {
    const { app, stack } = nagged({ 'rcb:alarmEmail': 'ops@example.org' });
    const template = app.synth().getStackByName(stack.stackName).template as {
      Resources: Record<string, { Metadata?: { cdk_nag?: { rules_to_suppress: Array<{ id: string; reason: string }> } } }>;
    };
    const acknowledgements = Object.entries(template.Resources).flatMap(([id, r]) =>
      (r.Metadata?.cdk_nag?.rules_to_suppress ?? []).map((s) => ({ id, rule: s.id, reason: s.reason })),
    );
    expect(acknowledgements.length).toBeGreaterThan(0);
    for (const a of acknowledgements) expect({ ...a, long: a.reason.length >= 60 }).toEqual({ ...a, long: true });
  });
});
