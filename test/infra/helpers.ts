/**
 * Stacks for infra tests: the feature flags of cdk.json, bundling off (no esbuild run, no
 * Docker), props given directly. A construct's tests build it alone on a stack of its own
 * (`constructStack`); the tests that need the whole stack as deployed share one synthesis
 * of it per jest run (`sharedStack`), since a synthesis stages the Docker build context.
 */
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { RcbStack, type RcbStackProps } from '../../infra/rcb-stack';
import { SHARED_STACK_DIR_ENV } from './shared-stack-env';

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

/** The app every test stack lives in: cdk.json's feature flags, no bundling. */
export function testApp(outdir?: string): App {
  return new App({ context: { ...featureFlags(), ...NO_BUNDLING }, builtinCloudFormationValidation: false, ...(outdir ? { outdir } : {}) });
}

/** A stack of its own for the constructs one test builds, and its template. */
export function constructStack<T>(build: (stack: Stack) => T): { stack: Stack; template: Template; built: T } {
  const stack = new Stack(testApp(), 'RcbTest', { analyticsReporting: false });
  const built = build(stack);
  return { stack, template: Template.fromStack(stack), built };
}

/** `build` called once per distinct props (compared as JSON), its result kept for the file's other tests. */
export function oncePerProps<P, T>(build: (props: P) => T, defaults: P): (props?: P) => T {
  const built = new Map<string, T>();
  return (props = defaults) => {
    const key = JSON.stringify(props);
    if (!built.has(key)) built.set(key, build(props));
    return built.get(key) as T;
  };
}

/** The whole stack, built (not synthesized): for what the construct tree itself shows. */
export function unsynthesizedStack(props: RcbStackProps = {}): RcbStack {
  return new RcbStack(testApp(), 'RcbTest', { analyticsReporting: false, ...props });
}

/** The whole stack with default props, synthesized: its template and its cloud assembly. */
export interface SharedStack {
  template: Template;
  /** The cloud assembly folder (the staged image context is in it). */
  assemblyDir: string;
  artifactId: string;
}

interface SharedStackManifest {
  artifactId: string;
  templateFile: string;
}

let sharedHere: SharedStack | undefined;

/**
 * The whole stack, synthesized once per jest run and read by every test file that needs it:
 * the first worker to ask synthesizes it into the run's folder (test/infra/shared-stack-setup.ts
 * makes it), the others wait for its manifest. Outside such a run (no folder given), it is
 * synthesized once in this process.
 */
export function sharedStack(): SharedStack {
  if (sharedHere) return sharedHere;
  const dir = process.env[SHARED_STACK_DIR_ENV] || mkdtempSync(join(tmpdir(), 'rcb-stack-'));
  const manifestFile = join(dir, 'manifest.json');
  const failedFile = join(dir, 'failed.txt');
  const outdir = join(dir, 'cdk.out');
  let mine = false;
  try {
    closeSync(openSync(join(dir, 'lock'), 'wx'));
    mine = true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  if (mine) {
    try {
      mkdirSync(outdir, { recursive: true });
      const app = testApp(outdir);
      const stack = new RcbStack(app, 'RcbTest', { analyticsReporting: false });
      app.synth();
      const manifest: SharedStackManifest = { artifactId: stack.artifactId, templateFile: stack.templateFile };
      writeFileSync(`${manifestFile}.tmp`, JSON.stringify(manifest));
      renameSync(`${manifestFile}.tmp`, manifestFile);
    } catch (e) {
      writeFileSync(failedFile, String((e as Error).stack ?? e));
      throw e;
    }
  } else {
    waitFor(() => existsSync(manifestFile) || existsSync(failedFile), 180_000, `the shared stack in ${dir}`);
    if (existsSync(failedFile)) throw new Error(`the shared stack failed to synthesize in another test file:\n${readFileSync(failedFile, 'utf8')}`);
  }
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as SharedStackManifest;
  const template = Template.fromJSON(JSON.parse(readFileSync(join(outdir, manifest.templateFile), 'utf8')));
  sharedHere = { template, assemblyDir: outdir, artifactId: manifest.artifactId };
  return sharedHere;
}

/** Blocks until `done()` (the other worker synthesizes meanwhile; nothing of this one can run). */
function waitFor(done: () => boolean, timeoutMs: number, what: string): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting ${timeoutMs / 1000} s for ${what}`);
    Atomics.wait(pause, 0, 0, 100);
  }
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
    if (roles.some((r) => r.Ref === roleLogicalId)) statements.push(...(policy.Properties!.PolicyDocument.Statement as Statement[]));
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
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, any> }>;
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
      const alias = 'Ref' in p ? resources[String(p.Ref)] : undefined;
      // Ref of an alias is its qualified ARN (the function's logical id and the alias's name).
      if (alias?.Type === 'AWS::Lambda::Alias')
        return `arn:aws:lambda:us-east-1:123456789012:function:${alias.Properties?.FunctionName?.Ref}:${alias.Properties?.Name}`;
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
    for (const nested of [state.ItemProcessor, state.Iterator, ...((state.Branches as unknown[]) ?? [])] as Array<
      { States?: Record<string, any> } | undefined
    >) {
      if (nested?.States) Object.assign(out, allStates(nested.States));
    }
  }
  return out;
}
