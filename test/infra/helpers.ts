/**
 * Builds the rcb stack for infra tests: the feature flags of cdk.json, bundling off (no
 * esbuild run, no Docker), props given directly. Stacks are cached by their props, since
 * a synth stages the Docker build context and takes a second or two.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { RcbStack, type RcbStackProps } from '../../infra/rcb-stack';

export const REPO_ROOT = join(__dirname, '..', '..');

/** The `context` of cdk.json, as `cdk synth` passes it to the app. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  return cdkJson.context;
}

/** Feature flags only (no rcb:* keys): tests pass rcb configuration as props. */
export function featureFlags(): Record<string, unknown> {
  return Object.fromEntries(Object.entries(cdkJsonContext()).filter(([key]) => key.startsWith('@aws-cdk')));
}

/** Context that skips asset bundling: NodejsFunction assets are staged from source, unbuilt. */
export const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] as string[] };

export interface Built {
  app: App;
  stack: RcbStack;
  template: Template;
}

const cache = new Map<string, Built>();

export function buildStack(props: RcbStackProps = {}): Built {
  const key = JSON.stringify(props);
  const hit = cache.get(key);
  if (hit) return hit;
  const app = new App({ context: { ...featureFlags(), ...NO_BUNDLING }, builtinCloudFormationValidation: false });
  const stack = new RcbStack(app, 'RcbTest', { analyticsReporting: false, ...props });
  const built = { app, stack, template: Template.fromStack(stack) };
  cache.set(key, built);
  return built;
}

type Resources = Record<string, { Type: string; Properties?: Record<string, any>; [k: string]: unknown }>;

/** Resources of one type, by logical id. */
export function resourcesOfType(template: Template, type: string): Resources {
  return template.findResources(type) as Resources;
}

/** The logical id of the one resource whose id starts with the given construct path prefix. */
export function logicalIdStartingWith(template: Template, type: string, prefix: string): string {
  const ids = Object.keys(resourcesOfType(template, type)).filter((id) => id.startsWith(prefix));
  if (ids.length !== 1) throw new Error(`expected one ${type} starting with ${prefix}, found ${ids.join(', ') || 'none'}`);
  return ids[0];
}

/** An IAM policy statement as CloudFormation holds it. */
export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, unknown>;
  Principal?: unknown;
  Sid?: string;
}

/** Every statement of the inline/default policies attached to a role (by the role's logical id). */
export function roleStatements(template: Template, roleLogicalId: string): Statement[] {
  const policies = resourcesOfType(template, 'AWS::IAM::Policy');
  const statements: Statement[] = [];
  for (const policy of Object.values(policies)) {
    const roles = (policy.Properties?.Roles ?? []) as Array<{ Ref?: string }>;
    if (roles.some((r) => r.Ref === roleLogicalId)) statements.push(...(policy.Properties?.PolicyDocument.Statement as Statement[]));
  }
  const role = resourcesOfType(template, 'AWS::IAM::Role')[roleLogicalId];
  for (const inline of (role?.Properties?.Policies ?? []) as Array<{ PolicyDocument: { Statement: Statement[] } }>) {
    statements.push(...inline.PolicyDocument.Statement);
  }
  return statements;
}

export function actionsOf(statement: Statement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

/** All actions granted to a role, sorted and de-duplicated. */
export function roleActions(template: Template, roleLogicalId: string): string[] {
  return [...new Set(roleStatements(template, roleLogicalId).flatMap(actionsOf))].sort();
}

/** Resolves a token-bearing value to a readable string (Fn::Join flattened, Refs and GetAtts named). */
export function flatten(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(flatten).join(',');
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    if ('Fn::Join' in obj) {
      const [sep, parts] = obj['Fn::Join'] as [string, unknown[]];
      return parts.map(flatten).join(sep);
    }
    if ('Ref' in obj) return `\${${String(obj.Ref)}}`;
    if ('Fn::GetAtt' in obj) return `\${${(obj['Fn::GetAtt'] as string[]).join('.')}}`;
    if ('Fn::Select' in obj) return `\${Select}`;
    return JSON.stringify(obj);
  }
  return String(value);
}

/**
 * The state machine's definition as a JSON object, with every CloudFormation token
 * replaced by a placeholder ARN-like string, so that it can be inspected or executed.
 */
export function stateMachineDefinition(template: Template): any {
  const machines = resourcesOfType(template, 'AWS::StepFunctions::StateMachine');
  const [machine] = Object.values(machines);
  const definition = machine.Properties?.DefinitionString as unknown;
  const [, parts] = (definition as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
  const text = parts
    .map((part) => {
      if (typeof part === 'string') return part;
      const p = part as Record<string, unknown>;
      if ('Ref' in p && p.Ref === 'AWS::Partition') return 'aws';
      if ('Ref' in p && p.Ref === 'AWS::Region') return 'us-east-1';
      if ('Ref' in p && p.Ref === 'AWS::AccountId') return '123456789012';
      if ('Fn::GetAtt' in p) {
        const [id] = p['Fn::GetAtt'] as string[];
        return `arn:aws:lambda:us-east-1:123456789012:function:${id}`;
      }
      if ('Ref' in p) return String(p.Ref);
      throw new Error(`unexpected token in the definition: ${JSON.stringify(p)}`);
    })
    .join('');
  return JSON.parse(text);
}

/** The states of a Parallel's branches by branch index, each branch's states by name. */
export function branchStates(parallel: any): Array<Record<string, any>> {
  return ((parallel?.Branches ?? []) as Array<{ States: Record<string, any> }>).map((b) => b.States);
}

/** Every state of a definition by name, those of Parallel branches and Map item processors included. */
export function allStates(states: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [name, state] of Object.entries(states)) {
    out[name] = state;
    for (const nested of [state.ItemProcessor, state.Iterator, ...((state.Branches as unknown[]) ?? [])] as Array<{ States?: Record<string, any> } | undefined>) {
      if (nested?.States) Object.assign(out, allStates(nested.States));
    }
  }
  return out;
}
