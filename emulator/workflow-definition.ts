/**
 * The run workflow's definition exactly as deployed: the CDK stack synthesized in this
 * process (cdk.json context, asset bundling off, so neither esbuild nor Docker runs), the
 * state machine's DefinitionString taken from the template and its CloudFormation tokens
 * resolved to placeholder names. Task states are bound to local code by state name, so the
 * placeholders are never called.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../core/util/package-root';
import { imageContextOf, type ImageContext } from './container-app';
import type * as RcbStackModule from '../infra/rcb-stack';
import type * as ConfigModule from '../infra/config';
import type { StageTable } from '../app/stages/cloud-stage';

/** An Amazon States Language document (the parts the emulator reads). */
export interface StateMachineDefinition {
  StartAt: string;
  States: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
}

/** What the emulator reads of the synthesized stack. */
export interface SynthesizedWorkflow {
  definition: StateMachineDefinition;
  /** RCB_GENERATION_TIMEOUT_SEC of the CheckProgress function, when the template sets it. */
  generationTimeoutSec?: number;
  /** maxReceiveCount of the lane queues' redrive policy (deliveries before a message is dead-lettered). */
  maxReceiveCount?: number;
  /** The template and the cloud assembly holding the Lambda bundles, when synthesized with bundling. */
  deployment?: { template: CfnTemplate; assemblyDir: string };
  /** The evaluation image's build context as the assembly stages it (synthesizeWorkflow). */
  imageContext?: ImageContext;
}

export type CfnTemplate = { Resources: Record<string, { Type: string; Properties?: Record<string, any>; Metadata?: Record<string, any> }> };

/** CloudFormation's pseudo parameters as the emulated stack has them (the template and the functions' environment). */
export const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': 'us-east-1',
  'AWS::AccountId': '000000000000',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'RcbEmulated',
};

/**
 * The function a Lambda alias or version of the template points at, with its qualifier
 * (`live`, or the version's logical id): the workflow invokes those, not `$LATEST`
 * (docs/cloud.md, "Pins: a deploy during a run"). Undefined for any other resource.
 */
export function qualifiedFunction(template: CfnTemplate | undefined, logicalId: string): { functionId: string; qualifier: string } | undefined {
  const r = template?.Resources[logicalId];
  const fn = (r?.Properties?.FunctionName as { Ref?: string } | undefined)?.Ref;
  if (!r || !fn) return undefined;
  if (r.Type === 'AWS::Lambda::Alias') return { functionId: fn, qualifier: String(r.Properties?.Name) };
  if (r.Type === 'AWS::Lambda::Version') return { functionId: fn, qualifier: logicalId };
  return undefined;
}

/** A token as text that is safe inside a JSON string literal. */
function resolveToken(token: Record<string, unknown>, template?: CfnTemplate): string {
  if ('Ref' in token) {
    const target = qualifiedFunction(template, String(token.Ref));
    if (target) return `arn:aws:lambda:us-east-1:000000000000:function:emulated-${target.functionId}:${target.qualifier}`;
    return PSEUDO[String(token.Ref)] ?? `emulated-${String(token.Ref)}`;
  }
  if ('Fn::GetAtt' in token) return `arn:aws:lambda:us-east-1:000000000000:function:emulated-${(token['Fn::GetAtt'] as string[])[0]}`;
  if ('Fn::Join' in token) {
    const [sep, parts] = token['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => (typeof p === 'string' ? p : resolveToken(p as Record<string, unknown>, template))).join(sep);
  }
  return 'emulated-token';
}

/** The definition of the template's one state machine, tokens resolved. */
export function definitionFromTemplate(template: CfnTemplate): StateMachineDefinition {
  const machines = Object.values(template.Resources).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine');
  if (machines.length !== 1) throw new Error(`expected one state machine in the template, found ${machines.length}`);
  const raw = machines[0].Properties?.DefinitionString as unknown;
  const text = typeof raw === 'string' ? raw : resolveToken(raw as Record<string, unknown>, template);
  return JSON.parse(text) as StateMachineDefinition;
}

export function workflowFromTemplate(template: CfnTemplate): SynthesizedWorkflow {
  const resources = Object.values(template.Resources);
  const timeout = resources
    .filter((r) => r.Type === 'AWS::Lambda::Function')
    .map((r) => r.Properties?.Environment?.Variables?.RCB_GENERATION_TIMEOUT_SEC as string | undefined)
    .find((v) => v !== undefined);
  const receive = resources
    .filter((r) => r.Type === 'AWS::SQS::Queue')
    .map((r) => r.Properties?.RedrivePolicy?.maxReceiveCount as number | undefined)
    .find((v) => v !== undefined);
  return {
    definition: definitionFromTemplate(template),
    generationTimeoutSec: timeout !== undefined ? Number(timeout) : undefined,
    maxReceiveCount: receive,
  };
}

/**
 * Runs `fn` with this process's stderr held back (CDK and esbuild report every bundle
 * there), and writes what was held only if `fn` throws.
 */
function quietly<T>(fn: () => T): T {
  const write = process.stderr.write.bind(process.stderr);
  const held: string[] = [];
  process.stderr.write = ((chunk: string | Uint8Array) => {
    held.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    return true;
  }) as typeof process.stderr.write;
  try {
    return fn();
  } catch (err) {
    process.stderr.write = write;
    write(held.join(''));
    throw err;
  } finally {
    process.stderr.write = write;
  }
}

export interface SynthesizeOptions {
  /** `rcb:*` (or any) context over cdk.json's. */
  context?: Record<string, unknown>;
  /**
   * Bundle the Lambda functions with esbuild, as `cdk synth` does, into `outdir`; the
   * result then lists each function's bundle (`functions`). Off, neither esbuild nor Docker runs.
   * @default false
   */
  bundle?: boolean;
  /** Cloud assembly folder (needed to keep the bundles). @default a temporary one CDK picks */
  outdir?: string;
  /** The stage table the stack is built from. @default CLOUD_STAGES (app/stages/index.ts) */
  stages?: StageTable;
}

/**
 * Synthesizes the stack as `cdk synth` would (cdk.json context, `rcb:*` keys included),
 * with or without bundling. Needs aws-cdk-lib, a development dependency: the emulator runs
 * from a checkout, not from a production install.
 */
export async function synthesizeWorkflow(opts: SynthesizeOptions = {}): Promise<SynthesizedWorkflow> {
  let cdk: typeof import('aws-cdk-lib');
  try {
    cdk = await import('aws-cdk-lib');
  } catch {
    throw new Error('the emulator synthesizes the CDK stack and needs aws-cdk-lib (a dev dependency): run it from a checkout with `npm ci` done');
  }
  const { configFromContext }: typeof ConfigModule = require('../infra/config');
  const { RcbStack, stackPropsFromConfig }: typeof RcbStackModule = require('../infra/rcb-stack');
  const cdkJson = JSON.parse(readFileSync(join(packageRoot(), 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
  const app = new cdk.App({
    // With bundling, the asset metadata (set by the CDK CLI, not by a bare App) names each function's bundle folder.
    context: { ...cdkJson.context, ...opts.context, ...(opts.bundle ? { 'aws:cdk:enable-asset-metadata': true } : { 'aws:cdk:bundling-stacks': [] }) },
    analyticsReporting: false,
    // CDK's built-in CloudFormation validation (a WebAssembly rule engine) is half of an
    // unbundled synthesis's CPU time, for findings that only warn. `cdk synth` and `cdk deploy`
    // (bin/app.ts) keep it, and test/infra/nag.test.ts holds the stack to it with its findings
    // as errors; the emulator, which synthesizes the same stack again and again, does not.
    builtinCloudFormationValidation: false,
    ...(opts.outdir ? { outdir: opts.outdir } : {}),
  });
  const config = configFromContext(app.node);
  const stack = new RcbStack(app, config.stackName, {
    ...stackPropsFromConfig(config),
    analyticsReporting: false,
    ...(opts.stages ? { stages: opts.stages } : {}),
  });
  const assembly = opts.bundle ? quietly(() => app.synth()) : app.synth();
  const template = assembly.getStackArtifact(stack.artifactId).template as CfnTemplate;
  const workflow = { ...workflowFromTemplate(template), imageContext: imageContextOf(assembly.directory, stack.artifactId) };
  return opts.bundle ? { ...workflow, deployment: { template, assemblyDir: assembly.directory } } : workflow;
}

/**
 * The longest a Task state may take in the emulator when its definition sets no `TimeoutSeconds`.
 * In Step Functions such a state has no timeout of its own (a Lambda task is bounded by the
 * function's timeout, which the emulator's function pool enforces); aws-local-stepfunctions
 * instead times it out after 60 s, which a loaded machine reaches with a healthy function
 * (`States.Timeout`). The value is the largest a Node timer holds (2^31 - 1 ms, about 24 days).
 */
export const UNBOUNDED_TASK_TIMEOUT_SEC = Math.floor((2 ** 31 - 1) / 1000);

/**
 * The states with every Task that sets no timeout (nor TimeoutSecondsPath) given
 * UNBOUNDED_TASK_TIMEOUT_SEC, recursively through Parallel branches and Map processors:
 * what Step Functions does, not the local interpreter's 60 s default. Timeouts the definition
 * sets are kept.
 */
export function withStepFunctionsTaskTimeouts(states: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> {
  const visit = (s: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> =>
    Object.fromEntries(
      Object.entries(s).map(([name, state]) => {
        const out: Record<string, unknown> = { ...state };
        if (state.Type === 'Task' && state.TimeoutSeconds === undefined && state.TimeoutSecondsPath === undefined) {
          out.TimeoutSeconds = UNBOUNDED_TASK_TIMEOUT_SEC;
        }
        if (Array.isArray(state.Branches)) {
          out.Branches = (state.Branches as Array<{ States: Record<string, Record<string, unknown>> }>).map((b) => ({ ...b, States: visit(b.States) }));
        }
        for (const key of ['ItemProcessor', 'Iterator'] as const) {
          const p = state[key] as { States?: Record<string, Record<string, unknown>> } | undefined;
          if (p?.States) out[key] = { ...p, States: visit(p.States) };
        }
        return [name, out];
      }),
    );
  return visit(states);
}
