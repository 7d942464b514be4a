/**
 * `rcb cloud push-image [--stack-name NAME] [--image REF] [--repository URI] [--tag T] [--engine podman|docker]
 * [--compression zstd|gzip]`: pushes an evaluation image built by `npm run image:build` to the
 * stack's image repository (output ImageRepositoryUri, or --repository), and prints the
 * `cdk deploy -c rcb:image=...` line that pins it by digest. podman pushes its layers
 * zstd-compressed by default: every Fargate shard pulls and unpacks the whole image, and zstd
 * layers are smaller and unpack faster than gzip's (docs/paper-environment.md, "The production
 * image"); docker pushes the layers as it stores them (gzip). The engine is logged in with an ECR authorization token
 * (GetAuthorizationToken) given on its stdin, never on its argv or in what rcb prints; the
 * pushed digest is read back from ECR (DescribeImages), not from the engine's output.
 */
import { DescribeStacksCommand, type CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DescribeImagesCommand, GetAuthorizationTokenCommand, type ECRClient } from '@aws-sdk/client-ecr';
import { UsageError } from '../common';
import type { StackFlags } from './stack-flags';
import { engineMessage, findEngine, runEngine, type Engine, type EngineResult } from './container-engine';

/** The image `npm run image:build` tags by default. */
export const DEFAULT_LOCAL_IMAGE = 'localhost/rcb-evaluator:latest';
export const IMAGE_REPOSITORY_OUTPUT = 'ImageRepositoryUri';

export interface PushImageOptions extends StackFlags {
  /** The local image to push. @default DEFAULT_LOCAL_IMAGE */
  image?: string;
  /** The repository URI to push to, instead of the stack's output. */
  repository?: string;
  /** Tag in the repository (its tags are immutable). @default `rcb-<first 12 hex of the local image id>` */
  tag?: string;
  engine?: string;
  /** How the pushed layers are compressed. @default zstd with podman, gzip with docker */
  compression?: string;
}

export const COMPRESSIONS = ['zstd', 'gzip'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

/**
 * The layers' compression: --compression, else zstd with podman (it recompresses at push) and
 * gzip with docker, whose `push` sends the layers as stored and cannot recompress them.
 */
export function pushCompression(engine: Engine, flag: string | undefined): Compression {
  if (flag !== undefined && !(COMPRESSIONS as readonly string[]).includes(flag)) throw new UsageError(`--compression ${flag}: expected zstd or gzip`);
  const compression = (flag as Compression | undefined) ?? (engine === 'podman' ? 'zstd' : 'gzip');
  if (engine === 'docker' && compression === 'zstd')
    throw new UsageError(
      '--compression zstd: docker push sends the layers as docker stored them (gzip); push with --engine podman, ' +
        'or build and push in one step with `docker buildx build --output type=image,compression=zstd,oci-mediatypes=true,push=true`',
    );
  return compression;
}

export interface PushImageDeps {
  cfn: CloudFormationClient;
  ecr: ECRClient;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Where the engine is looked for (PATH) and the environment it runs in. @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** `123456789012.dkr.ecr.eu-west-1.amazonaws.com/name` -> its registry host and repository name. */
export function parseRepositoryUri(uri: string, what: string): { registry: string; name: string } {
  const slash = uri.indexOf('/');
  const registry = uri.slice(0, slash);
  const name = uri.slice(slash + 1);
  if (slash <= 0 || !name || !/\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/.test(registry) || /[@:]/.test(name)) {
    throw new UsageError(`${what}: expected an ECR repository URI <account>.dkr.ecr.<region>.amazonaws.com/<name>, got ${JSON.stringify(uri)}`);
  }
  return { registry, name };
}

async function stackRepository(cfn: CloudFormationClient, stackName: string): Promise<string> {
  let stacks;
  try {
    ({ Stacks: stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName })));
  } catch (e) {
    throw new UsageError(`cannot describe stack ${stackName}: ${(e as Error).message} (or pass --repository URI)`);
  }
  const uri = stacks?.[0]?.Outputs?.find((o) => o.OutputKey === IMAGE_REPOSITORY_OUTPUT)?.OutputValue;
  if (!uri) throw new UsageError(`stack ${stackName} has no output ${IMAGE_REPOSITORY_OUTPUT}: deploy the current rcb stack, or pass --repository URI`);
  return uri;
}

export async function cloudPushImage(opts: PushImageOptions, deps: PushImageDeps): Promise<number> {
  const env = deps.env ?? process.env;
  let engine;
  try {
    engine = findEngine(opts.engine, env);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const compression = pushCompression(engine.engine, opts.compression);
  const image = opts.image ?? DEFAULT_LOCAL_IMAGE;
  const repositoryUri = opts.repository ?? (await stackRepository(deps.cfn, opts.stackName));
  const { registry, name } = parseRepositoryUri(repositoryUri, opts.repository ? '--repository' : `stack ${opts.stackName} output ${IMAGE_REPOSITORY_OUTPUT}`);
  const run = async (args: string[], stdin?: string): Promise<EngineResult> => {
    deps.err(`$ ${engine.engine} ${args.join(' ')}\n`);
    return runEngine(engine.path, args, env, stdin);
  };

  // The local image first: nothing is asked of ECR for an image that is not there.
  const inspect = await run(['image', 'inspect', '--format', '{{.Id}}', image]);
  if (inspect.code !== 0) {
    throw new UsageError(`--image ${image}: ${engine.engine} has no such image (${engineMessage(inspect)}); build it with \`npm run image:build\``);
  }
  const localId = inspect.stdout.trim().replace(/^sha256:/, '');
  const tag = opts.tag ?? `rcb-${localId.slice(0, 12)}`;

  let password: string;
  try {
    const auth = await deps.ecr.send(new GetAuthorizationTokenCommand({}));
    const token = auth.authorizationData?.[0]?.authorizationToken;
    if (!token) throw new Error('the answer holds no authorization token');
    const decoded = Buffer.from(token, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new Error('the authorization token is not user:password');
    password = decoded.slice(colon + 1);
  } catch (e) {
    throw new UsageError(`ECR GetAuthorizationToken failed: ${(e as Error).message}`);
  }
  const login = await run(['login', '--username', 'AWS', '--password-stdin', registry], password);
  if (login.code !== 0) throw new UsageError(`${engine.engine} login to ${registry} refused: ${engineMessage(login).replaceAll(password, '***')}`);

  const target = `${repositoryUri}:${tag}`;
  const tagged = await run(['tag', image, target]);
  if (tagged.code !== 0) throw new UsageError(`${engine.engine} tag ${image} ${target} failed: ${engineMessage(tagged)}`);
  const pushed = await run(['push', ...(engine.engine === 'podman' ? ['--compression-format', compression] : []), target]);
  if (pushed.code !== 0) throw new UsageError(`${engine.engine} push ${target} failed: ${engineMessage(pushed)}`);

  let digest: string | undefined;
  try {
    const described = await deps.ecr.send(new DescribeImagesCommand({ repositoryName: name, imageIds: [{ imageTag: tag }] }));
    digest = described.imageDetails?.[0]?.imageDigest;
  } catch (e) {
    throw new UsageError(`pushed ${target}, but ECR DescribeImages of ${name}:${tag} failed: ${(e as Error).message}`);
  }
  if (!digest || !/^sha256:[0-9a-f]{64}$/.test(digest)) throw new UsageError(`pushed ${target}, but ECR reports no digest for tag ${tag} in ${name}`);
  deps.out(
    `pushed ${image} (local id ${localId.slice(0, 12)}) as ${target}, ${compression} layers\ndigest ${digest}\ndeploy with:\n  npx cdk deploy -c rcb:image=${repositoryUri}@${digest}\n`,
  );
  return 0;
}
