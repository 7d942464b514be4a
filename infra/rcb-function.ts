import * as path from 'node:path';
import { packageRoot } from '../core/util/package-root';
import { BUNDLED_RESOURCES } from '../core/cloud/bundle-resources';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';

const NODE_22_REASON =
  'Node.js 22 is a supported LTS Lambda runtime and the one this project pins: the bundles are built for node22 and tested on that line. Moving to a newer runtime is a change of RcbFunction only.';

/**
 * Repository root: the folder holding package.json, package-lock.json and functions/.
 * Found by walking up, so the stack synthesizes the same from sources and from dist/
 * (`rcb cloud run --emulate` from the build).
 */
export const PROJECT_ROOT = packageRoot();

export interface RcbFunctionProps {
  /** Folder name under functions/ whose `handler.ts` exports `handler`. */
  readonly functionDir: string;
  /**
   * The handler file, when it is not `functions/<functionDir>/handler.ts` (a stage defined in a test).
   * @default functions/<functionDir>/handler.ts
   */
  readonly entry?: string;
  /** What the function does, shown in the console. */
  readonly description: string;
  /**
   * Memory, MiB.
   * @default 256
   */
  readonly memorySize?: number;
  /**
   * Function timeout.
   * @default Duration.minutes(1)
   */
  readonly timeout?: Duration;
  /**
   * Environment variables besides the Powertools ones this construct sets.
   * @default - none
   */
  readonly environment?: Record<string, string>;
  /**
   * How long the function's log group keeps events.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Files copied into the bundle's `resources/` folder besides the shipped registry and
   * prompt template, by name there -> absolute source path (a deployment's own models file).
   * @default - none
   */
  readonly extraResources?: Record<string, string>;
}

/** A path quoted for the POSIX shell that runs the bundling hooks. */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * One Lambda function of the pipeline, built the same way for all: Node.js 22 on arm64,
 * bundled by the local esbuild (never Docker), X-Ray tracing, its own log group with a
 * retention, and a role that starts with no permission at all (no AWS managed policy):
 * every grant is added by the construct that uses the function.
 */
export class RcbFunction extends Construct {
  public readonly function: nodejs.NodejsFunction;
  /**
   * The `live` alias on the version this deploy published: what the state machine and the
   * event source mappings invoke, never `$LATEST` (docs/cloud.md, "Pins: a deploy during a run").
   */
  public readonly live: lambda.Alias;
  public readonly role: iam.Role;
  public readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: RcbFunctionProps) {
    super(scope, id);

    this.logGroup = new logs.LogGroup(this, 'LogGroup', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `rcb ${props.functionDir} function`,
    });
    // Instead of AWSLambdaBasicExecutionRole (logs:* on every log group): write to this group only.
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );

    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: props.entry ?? path.join(PROJECT_ROOT, 'functions', props.functionDir, 'handler.ts'),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      description: props.description,
      memorySize: props.memorySize ?? 256,
      timeout: props.timeout ?? Duration.minutes(1),
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      tracing: lambda.Tracing.ACTIVE,
      // Old versions stay: a run's pin names the versions it started with (docs/cloud.md, "Pins").
      currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN },
      environment: {
        POWERTOOLS_SERVICE_NAME: `rcb-${props.functionDir}`,
        POWERTOOLS_METRICS_NAMESPACE: 'rcb',
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
      bundling: {
        // The SDK is bundled so that the pinned client versions run, not the runtime's copy.
        bundleAwsSDK: true,
        minify: true,
        sourceMap: true,
        target: 'node22',
        format: nodejs.OutputFormat.CJS,
        forceDockerBundling: false,
        // esbuild's per-bundle summary would bury synth's (and the emulator's) own output.
        logLevel: nodejs.LogLevel.WARNING,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          // The handlers read the registry and the template through resourcePath(), which looks
          // beside the bundle first, as in /var/task, where nothing of the checkout exists.
          afterBundling: (_inputDir: string, outputDir: string): string[] => {
            const files: Array<[string, string]> = [
              ...BUNDLED_RESOURCES.map((name): [string, string] => [name, path.join(PROJECT_ROOT, 'resources', name)]),
              ...Object.entries(props.extraResources ?? {}),
            ];
            const dir = path.join(outputDir, 'resources');
            return [`mkdir -p ${shellQuote(dir)}`, ...files.map(([name, src]) => `cp ${shellQuote(src)} ${shellQuote(path.join(dir, name))}`)];
          },
        },
      },
    });

    this.live = this.function.addAlias('live');

    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'X-Ray PutTraceSegments/PutTelemetryRecords do not support resource-level permissions; CDK adds them with Resource "*" for active tracing.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(this.function, [
      {
        id: 'Serverless-LambdaDLQ',
        reason:
          'The function is never invoked asynchronously: Step Functions invokes it synchronously (with Retry/Catch) or an SQS event source mapping does, and the source queue has its own DLQ.',
      },
      { id: 'AwsSolutions-L1', reason: NODE_22_REASON },
      { id: 'Serverless-LambdaLatestVersion', reason: NODE_22_REASON },
    ]);
  }
}
