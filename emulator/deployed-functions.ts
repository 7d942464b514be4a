/**
 * The stack's Lambda functions as deployed: each function's bundle (its cdk.out asset,
 * built by the same esbuild step `cdk deploy` uploads) is copied into a folder that holds
 * only that bundle, as /var/task holds only the zip, and run there in its own Node process
 * with the environment the template gives the function (tokens resolved to the emulator's
 * servers) and nothing else: no checkout on any path, no node_modules above it, none of
 * this process's environment. A bundle that needs a file it does not carry fails here as it
 * would in AWS.
 *
 * Each function is a pool of instances (processes) that stay warm between invocations, one
 * invocation at a time each, as Lambda runs them; an invocation past the function's timeout
 * kills its instance and fails with Sandbox.Timedout. As in Lambda, an instance's start (its
 * Init phase: node and the bundle loaded) is not part of an invocation's timeout: the clock
 * starts once the handler is loaded, so a cold start on a loaded machine (several instances
 * loading their bundles at once on two cores) does not eat the invocation's time.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { cpSync, createWriteStream, mkdirSync, writeFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { type CfnTemplate, PSEUDO, qualifiedFunction } from './workflow-definition';

/** A function of the template with a bundled asset. */
export interface DeployedFunction {
  logicalId: string;
  /** The bundle in the cloud assembly. */
  assetDir: string;
  /** `file.export`, e.g. `index.handler`. */
  handler: string;
  timeoutSec: number;
  memoryMiB: number;
  /** The template's environment variables, CloudFormation tokens unresolved. */
  environment: Record<string, unknown>;
}

/** Every Lambda function of the template with a bundled asset (CDK's own custom-resource providers aside). */
export function deployedFunctions(template: CfnTemplate, assemblyDir: string): DeployedFunction[] {
  return (
    Object.entries(template.Resources)
      // rcb's own functions (RcbFunction names its Powertools service rcb-<dir>), not the
      // CDK's (the AwsCustomResource provider that looks up the endpoints' prefix lists).
      .filter(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['aws:asset:path'] && r.Properties?.Handler === 'index.handler')
      .filter(([, r]) => /^rcb-/.test(String(r.Properties?.Environment?.Variables?.POWERTOOLS_SERVICE_NAME ?? '')))
      .map(([logicalId, r]) => ({
        logicalId,
        assetDir: join(assemblyDir, String(r.Metadata!['aws:asset:path'])),
        handler: String(r.Properties!.Handler),
        timeoutSec: Number(r.Properties!.Timeout ?? 3),
        memoryMiB: Number(r.Properties!.MemorySize ?? 128),
        environment: (r.Properties!.Environment?.Variables ?? {}) as Record<string, unknown>,
      }))
  );
}

/** Logical id of the function each Task state of the definition invokes, by state name (Map item processors included). */
export function functionsByState(states: Record<string, Record<string, unknown>>): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (s: Record<string, Record<string, unknown>>): void => {
    for (const [name, state] of Object.entries(s)) {
      const target = [state.Resource, (state.Parameters as Record<string, unknown> | undefined)?.FunctionName].find(
        (v) => typeof v === 'string' && /:function:emulated-/.test(v),
      ) as string | undefined;
      if (state.Type === 'Task' && target) out.set(name, target.replace(/^.*:function:emulated-/, '').replace(/:.*$/, ''));
      for (const nested of [state.ItemProcessor, state.Iterator, ...((state.Branches as unknown[]) ?? [])] as Array<
        { States?: Record<string, Record<string, unknown>> } | undefined
      >) {
        if (nested?.States) visit(nested.States);
      }
    }
  };
  visit(states);
  return out;
}

/** Logical ids of the functions fed by each queue (the template's SQS event source mappings), by queue logical id. */
export function queueConsumers(template: CfnTemplate): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of Object.values(template.Resources)) {
    if (r.Type !== 'AWS::Lambda::EventSourceMapping') continue;
    const queue = (r.Properties?.EventSourceArn as { 'Fn::GetAtt'?: string[] } | undefined)?.['Fn::GetAtt']?.[0];
    // FunctionName is a Ref, or `<name>:live` built from the alias's Ref (CDK's form for an alias).
    const ref = /"Ref":"([^"]+)"/.exec(JSON.stringify(r.Properties?.FunctionName ?? null))?.[1];
    // The mappings name the `live` alias: the function behind it consumes the queue.
    const fn = ref ? (qualifiedFunction(template, ref)?.functionId ?? ref) : undefined;
    if (queue && fn) out.set(queue, fn);
  }
  return out;
}

/** Values of the template's resources in the emulator: what a Ref or Fn::GetAtt of each resolves to. */
export interface TokenValues {
  ref(logicalId: string, type: string): string;
  getAtt(logicalId: string, type: string, attribute: string): string;
}

/** A CloudFormation value (string, Ref, Fn::GetAtt, Fn::Join) resolved against the emulator's resources. */
export function resolveValue(value: unknown, template: CfnTemplate, values: TokenValues): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  const token = value as Record<string, unknown>;
  const typeOf = (id: string): string => {
    const r = template.Resources[id];
    if (!r) throw new Error(`the template refers to ${id}, which it does not define`);
    return r.Type;
  };
  if ('Ref' in token) {
    const id = String(token.Ref);
    return PSEUDO[id] ?? values.ref(id, typeOf(id));
  }
  if ('Fn::GetAtt' in token) {
    const [id, attribute] = token['Fn::GetAtt'] as [string, string];
    return values.getAtt(id, typeOf(id), attribute);
  }
  if ('Fn::Join' in token) {
    const [sep, parts] = token['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolveValue(p, template, values)).join(sep);
  }
  if ('Fn::Sub' in token && typeof token['Fn::Sub'] === 'string') {
    // `${AWS::Region}`, `${Logical}` and `${Logical.Attr}` (the one-argument form CDK writes for image URIs).
    return (token['Fn::Sub'] as string).replace(/\$\{([^}]+)\}/g, (_, ref: string) => {
      const [id, attribute] = ref.split('.');
      if (PSEUDO[id]) return PSEUDO[id];
      return attribute ? values.getAtt(id, typeOf(id), attribute) : values.ref(id, typeOf(id));
    });
  }
  throw new Error(`the emulator cannot resolve ${JSON.stringify(value).slice(0, 200)}`);
}

/**
 * The Lambda runtime stand-in each instance runs: it loads the bundle from the task root
 * (LAMBDA_TASK_ROOT, _HANDLER as Lambda sets them) and answers invocations over the IPC
 * channel. Plain JavaScript written beside the task root, so nothing of rcb is loaded.
 */
const BOOTSTRAP = `'use strict';
const path = require('node:path');
const spec = process.env._HANDLER;
const dot = spec.lastIndexOf('.');
const handler = require(path.join(process.env.LAMBDA_TASK_ROOT, spec.slice(0, dot)))[spec.slice(dot + 1)];
if (typeof handler !== 'function') throw new Error('Runtime.HandlerNotFound: ' + spec + ' is not a function');
// Init is over: from here on, invocations.
process.send({ ready: true });
const timeoutMs = Number(process.env.AWS_LAMBDA_FUNCTION_TIMEOUT) * 1000;
process.on('message', async ({ id, event }) => {
  const deadline = Date.now() + timeoutMs;
  const context = {
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST',
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: 'emulated-' + id,
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:' + process.env.AWS_LAMBDA_FUNCTION_NAME,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  try {
    const result = await handler(event, context);
    process.send({ id, result: result === undefined ? null : result });
  } catch (err) {
    process.send({ id, error: { name: (err && err.name) || 'Error', message: String((err && err.message) || err) } });
  }
});
`;

/** An error a deployed function's invocation ended with, named as Lambda names it to Step Functions. */
export class InvocationError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

interface Instance {
  child: ChildProcess;
  busy?: { resolve(v: unknown): void; reject(e: Error): void; timer?: NodeJS.Timeout };
  /** Resolves once the instance has loaded its handler (its Init phase is over). */
  ready: Promise<void>;
  /** Last output, for the error of an instance that dies. */
  tail: string;
  /** The configuration it was started with (FunctionProcesses.updateEnvironment counts them). */
  configuration: number;
}

export interface FunctionProcessOptions {
  fn: DeployedFunction;
  /** Folder made for this function: task/ (the bundle), runtime/, tmp/ and its log. */
  root: string;
  /** The function's environment, resolved (the template's variables and the emulator's endpoints). */
  env: Record<string, string>;
}

/** One deployed function: its bundle staged alone, run in warm instances on demand. */
export class FunctionProcesses {
  readonly taskRoot: string;
  private readonly bootstrap: string;
  private readonly log: WriteStream;
  private readonly idle: Instance[] = [];
  private readonly all = new Set<Instance>();
  private nextId = 0;
  /** The function's environment now: the options' one, with every update applied. */
  private env: Record<string, string>;
  /** Configurations so far: an instance of an earlier one is retired instead of reused. */
  private configuration = 0;
  /** Invocations so far. */
  invocations = 0;

  constructor(private readonly options: FunctionProcessOptions) {
    this.env = { ...options.env };
    this.taskRoot = join(options.root, 'task');
    cpSync(options.fn.assetDir, this.taskRoot, { recursive: true });
    const runtime = join(options.root, 'runtime');
    mkdirSync(runtime, { recursive: true });
    mkdirSync(join(options.root, 'tmp'), { recursive: true });
    this.bootstrap = join(runtime, 'bootstrap.js');
    writeFileSync(this.bootstrap, BOOTSTRAP);
    this.log = createWriteStream(join(options.root, 'function.log'));
  }

  /** Path of the file that collects every instance's stdout and stderr (Lambda's log group). */
  get logFile(): string {
    return join(this.options.root, 'function.log');
  }

  /** The function's environment variables now (the template's, resolved, and the emulator's). */
  get environment(): Readonly<Record<string, string>> {
    return this.env;
  }

  /**
   * A deploy that changes the function's environment (UpdateFunctionConfiguration): invocations
   * from now on run in instances started with it. Idle instances of the former configuration
   * are stopped, and busy ones once their invocation has ended, as Lambda retires them.
   */
  updateEnvironment(changes: Record<string, string>): void {
    this.env = { ...this.env, ...changes };
    this.configuration++;
    for (const instance of this.idle.splice(0)) instance.child.kill('SIGTERM');
  }

  private spawn(): Instance {
    const { fn } = this.options;
    const env = this.env;
    const child = fork(this.bootstrap, [], {
      cwd: this.taskRoot,
      // Not this process's flags (ts-jest, tsx): the runtime's node, as Lambda starts it.
      execArgv: [],
      env: {
        PATH: '/usr/local/bin:/usr/bin:/bin',
        LANG: 'en_US.UTF-8',
        TZ: ':UTC',
        LAMBDA_TASK_ROOT: this.taskRoot,
        _HANDLER: fn.handler,
        AWS_LAMBDA_FUNCTION_NAME: fn.logicalId,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMiB),
        AWS_LAMBDA_FUNCTION_TIMEOUT: String(fn.timeoutSec),
        TMPDIR: join(this.options.root, 'tmp'),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let initialised!: () => void;
    const instance: Instance = { child, tail: '', ready: new Promise<void>((resolve) => (initialised = resolve)), configuration: this.configuration };
    const keep = (d: Buffer): void => {
      this.log.write(d);
      instance.tail = (instance.tail + d.toString()).slice(-4000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.on('message', (msg: { ready?: true; id: number; result?: unknown; error?: { name: string; message: string } }) => {
      if (msg.ready) return initialised();
      const busy = instance.busy;
      if (!busy) return;
      clearTimeout(busy.timer);
      instance.busy = undefined;
      if (instance.configuration === this.configuration) this.idle.push(instance);
      else instance.child.kill('SIGTERM');
      if (msg.error) busy.reject(new InvocationError(msg.error.name, msg.error.message));
      else busy.resolve(msg.result);
    });
    child.once('exit', (code, signal) => {
      this.all.delete(instance);
      const i = this.idle.indexOf(instance);
      if (i >= 0) this.idle.splice(i, 1);
      const busy = instance.busy;
      if (!busy) return;
      clearTimeout(busy.timer);
      instance.busy = undefined;
      const lastLines = instance.tail.trim().split('\n').slice(-5).join(' | ');
      busy.reject(new InvocationError('Runtime.ExitError', `${fn.logicalId}: the runtime exited (${signal ?? `code ${code}`}): ${lastLines}`));
    });
    this.all.add(instance);
    return instance;
  }

  /** Invokes the function with an event and resolves with its result, or rejects with its error. */
  invoke(event: unknown): Promise<unknown> {
    this.invocations++;
    const instance = this.idle.pop() ?? this.spawn();
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const busy: NonNullable<Instance['busy']> = { resolve, reject };
      // Held from now (an instance that dies while starting fails this invocation), timed from its handler's load.
      instance.busy = busy;
      void instance.ready.then(() => {
        if (instance.busy !== busy) return;
        busy.timer = setTimeout(() => {
          // As Lambda does: the instance is stopped and the invocation fails.
          instance.busy = undefined;
          instance.child.kill('SIGKILL');
          reject(new InvocationError('Sandbox.Timedout', `${this.options.fn.logicalId}: task timed out after ${this.options.fn.timeoutSec}.00 seconds`));
        }, this.options.fn.timeoutSec * 1000);
        instance.child.send({ id, event });
      });
    });
  }

  /** Stops every instance (each a child process of this one). */
  async close(): Promise<void> {
    const exits = [...this.all].map(
      (i) =>
        new Promise<void>((resolve) => {
          if (i.child.exitCode !== null || i.child.signalCode !== null) return resolve();
          i.child.once('exit', () => resolve());
          i.child.kill('SIGTERM');
        }),
    );
    await Promise.all(exits);
    await new Promise<void>((resolve) => this.log.end(resolve));
  }
}
