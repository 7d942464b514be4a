/**
 * `rcb cloud push-image` against mocked ECR and CloudFormation, with the container engine a
 * fake executable on PATH: it records each call's argv and stdin, refuses a password on its
 * argv, and is told by its environment to refuse the login or fail the push. The password
 * goes to stdin only and never into what rcb prints; errors name what failed.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mockClient } from 'aws-sdk-client-mock';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DescribeImagesCommand, ECRClient, GetAuthorizationTokenCommand } from '@aws-sdk/client-ecr';
import { cloudPushImage, parseRepositoryUri, type PushImageDeps } from '../../bin/commands/cloud/push-image';
import { findEngine } from '../../bin/commands/cloud/container-engine';
import { UsageError } from '../../bin/commands/common';
import { tempDir } from '../helpers/cli';

const cfnMock = mockClient(CloudFormationClient);
const ecrMock = mockClient(ECRClient);

const REPO = '111122223333.dkr.ecr.eu-west-1.amazonaws.com/rcb-evaluator-abc';
const REGISTRY = '111122223333.dkr.ecr.eu-west-1.amazonaws.com';
const PASSWORD = 'eyJwYXlsb2FkIjoic2VjcmV0LXRva2VuLTEyMyJ9';
const LOCAL_ID = `sha256:${'ab'.repeat(32)}`;
const DIGEST = `sha256:${'cd'.repeat(32)}`;

/** A fake podman/docker: appends {argv, stdin} to $FAKE_ENGINE_LOG; behaviour from FAKE_ENGINE_* variables. */
const FAKE_ENGINE = `#!/usr/bin/env node
const fs = require('node:fs');
const argv = process.argv.slice(2);
let stdin = '';
try { stdin = fs.readFileSync(0, 'utf8'); } catch {}
fs.appendFileSync(process.env.FAKE_ENGINE_LOG, JSON.stringify({ argv, stdin }) + '\\n');
if (argv.some((a) => a.includes(process.env.FAKE_ENGINE_SECRET))) { process.stderr.write('refused: a password on the command line\\n'); process.exit(97); }
const [cmd] = argv;
if (cmd === 'image') {
  if (process.env.FAKE_ENGINE_NO_IMAGE) { process.stderr.write('Error: ' + argv.at(-1) + ': image not known\\n'); process.exit(125); }
  process.stdout.write('${LOCAL_ID}\\n'); process.exit(0);
}
if (cmd === 'login') {
  if (process.env.FAKE_ENGINE_LOGIN === 'refuse' || stdin !== process.env.FAKE_ENGINE_SECRET) { process.stderr.write('Error: logging into "' + argv.at(-1) + '": invalid username/password\\n'); process.exit(125); }
  process.stdout.write('Login Succeeded!\\n'); process.exit(0);
}
if (cmd === 'tag') process.exit(0);
if (cmd === 'push') {
  if (process.env.FAKE_ENGINE_PUSH === 'fail') { process.stderr.write('Error: writing blob: denied: not authorized to perform ecr:InitiateLayerUpload\\n'); process.exit(125); }
  process.exit(0);
}
process.stderr.write('unknown command ' + cmd + '\\n'); process.exit(2);
`;

interface Call {
  argv: string[];
  stdin: string;
}

function setup(engines: string[] = ['podman'], extra: Record<string, string> = {}) {
  const dir = tempDir('rcb-push-image-');
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const e of engines) {
    writeFileSync(join(bin, e), FAKE_ENGINE);
    chmodSync(join(bin, e), 0o755);
  }
  const log = join(dir, 'calls.jsonl');
  // node alone beside the fakes: the machine's own podman or docker stay off PATH.
  const nodeDir = join(dir, 'node-bin');
  mkdirSync(nodeDir, { recursive: true });
  symlinkSync(process.execPath, join(nodeDir, 'node'));
  const env = { PATH: `${bin}:${nodeDir}`, FAKE_ENGINE_LOG: log, FAKE_ENGINE_SECRET: PASSWORD, ...extra };
  let out = '';
  let err = '';
  const deps: PushImageDeps = {
    cfn: new CloudFormationClient({ region: 'eu-west-1' }),
    ecr: new ECRClient({ region: 'eu-west-1' }),
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    env,
  };
  const calls = (): Call[] =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Call)
      : [];
  return { deps, calls, printed: () => out + err, out: () => out };
}

beforeEach(() => {
  cfnMock.reset();
  ecrMock.reset();
  cfnMock.on(DescribeStacksCommand).resolves({
    Stacks: [{ StackName: 'Rcb', CreationTime: new Date(), StackStatus: 'UPDATE_COMPLETE', Outputs: [{ OutputKey: 'ImageRepositoryUri', OutputValue: REPO }] }],
  });
  ecrMock.on(GetAuthorizationTokenCommand).resolves({
    authorizationData: [{ authorizationToken: Buffer.from(`AWS:${PASSWORD}`).toString('base64'), proxyEndpoint: `https://${REGISTRY}` }],
  });
  ecrMock.on(DescribeImagesCommand).resolves({ imageDetails: [{ imageDigest: DIGEST, imageTags: ['rcb-abababababab'] }] });
});

describe('rcb cloud push-image', () => {
  it("logs in with the token on stdin, pushes to the stack's repository, prints the cdk deploy line with ECR's digest", async () => {
    const t = setup();
    expect(await cloudPushImage({ stackName: 'Rcb' }, t.deps)).toBe(0);
    const calls = t.calls();
    expect(calls.map((c) => c.argv)).toEqual([
      ['image', 'inspect', '--format', '{{.Id}}', 'localhost/rcb-evaluator:latest'],
      ['login', '--username', 'AWS', '--password-stdin', REGISTRY],
      ['tag', 'localhost/rcb-evaluator:latest', `${REPO}:rcb-abababababab`],
      // zstd by default with podman: every Fargate shard pulls and unpacks the whole image.
      ['push', '--compression-format', 'zstd', `${REPO}:rcb-abababababab`],
    ]);
    expect(calls[1].stdin).toBe(PASSWORD);
    expect(calls.filter((c) => c.stdin.includes(PASSWORD))).toHaveLength(1);
    expect(t.out()).toContain(`npx cdk deploy -c rcb:image=${REPO}@${DIGEST}\n`);
    expect(t.printed()).not.toContain(PASSWORD);
    const described = ecrMock.commandCalls(DescribeImagesCommand)[0].args[0].input;
    expect(described).toEqual({ repositoryName: 'rcb-evaluator-abc', imageIds: [{ imageTag: 'rcb-abababababab' }] });
  });

  it('takes --repository, --image, --tag and --engine docker without reading the stack', async () => {
    const t = setup(['podman', 'docker']);
    const other = '444455556666.dkr.ecr.us-east-1.amazonaws.com/team/rcb';
    expect(await cloudPushImage({ stackName: 'Rcb', repository: other, image: 'rcb:dev', tag: 'v7', engine: 'docker' }, t.deps)).toBe(0);
    expect(cfnMock.commandCalls(DescribeStacksCommand)).toHaveLength(0);
    // docker pushes its stored (gzip) layers: no compression flag.
    expect(t.calls().map((c) => c.argv)).toContainEqual(['push', `${other}:v7`]);
    expect(t.calls()[1].argv.at(-1)).toBe('444455556666.dkr.ecr.us-east-1.amazonaws.com');
    expect(t.out()).toContain(`rcb:image=${other}@${DIGEST}`);
  });

  it('--compression: gzip with podman on request; zstd with docker refused before ECR is asked, saying how', async () => {
    const gzip = setup();
    expect(await cloudPushImage({ stackName: 'Rcb', compression: 'gzip' }, gzip.deps)).toBe(0);
    expect(gzip.calls().at(-1)!.argv).toEqual(['push', '--compression-format', 'gzip', `${REPO}:rcb-abababababab`]);
    expect(gzip.out()).toContain('gzip layers');

    ecrMock.resetHistory();
    const docker = setup(['docker']);
    await expect(cloudPushImage({ stackName: 'Rcb', compression: 'zstd' }, docker.deps)).rejects.toThrow(
      /--compression zstd: docker push sends the layers as docker stored them \(gzip\); push with --engine podman, or .*compression=zstd/,
    );
    expect(docker.calls()).toEqual([]);
    expect(ecrMock.commandCalls(GetAuthorizationTokenCommand)).toHaveLength(0);
    await expect(cloudPushImage({ stackName: 'Rcb', compression: 'lz4' }, setup().deps)).rejects.toThrow('--compression lz4: expected zstd or gzip');
  });

  it('the fake engine refuses a password on its argv (what the test guards against)', async () => {
    const t = setup();
    // A login as a careless tool would make it, to show the fake's check holds.
    const { runEngine } = await import('../../bin/commands/cloud/container-engine');
    const r = await runEngine(join(t.deps.env!.PATH!.split(':')[0], 'podman'), ['login', '-p', PASSWORD, REGISTRY], t.deps.env!);
    expect(r.code).toBe(97);
  });

  it('errors name what failed: no engine, no local image, token, login refused, push failed with the engine message, no digest', async () => {
    await expect(cloudPushImage({ stackName: 'Rcb' }, setup([]).deps)).rejects.toThrow(/no container engine: neither podman nor docker is on PATH/);
    await expect(cloudPushImage({ stackName: 'Rcb', engine: 'docker' }, setup(['podman']).deps)).rejects.toThrow(/--engine docker: docker is not on PATH/);
    await expect(cloudPushImage({ stackName: 'Rcb', engine: 'nerdctl' }, setup().deps)).rejects.toThrow('--engine nerdctl: expected podman or docker');

    await expect(cloudPushImage({ stackName: 'Rcb' }, setup(['podman'], { FAKE_ENGINE_NO_IMAGE: '1' }).deps)).rejects.toThrow(
      /--image localhost\/rcb-evaluator:latest: podman has no such image \(Error: .*image not known\); build it with `npm run image:build`/,
    );

    const refused = setup(['podman'], { FAKE_ENGINE_LOGIN: 'refuse' });
    const login = cloudPushImage({ stackName: 'Rcb' }, refused.deps);
    await expect(login).rejects.toThrow(UsageError);
    await expect(login).rejects.toThrow(`podman login to ${REGISTRY} refused: Error: logging into "${REGISTRY}": invalid username/password`);
    expect(refused.calls().map((c) => c.argv[0])).not.toContain('push');

    const push = cloudPushImage({ stackName: 'Rcb' }, setup(['podman'], { FAKE_ENGINE_PUSH: 'fail' }).deps);
    await expect(push).rejects.toThrow(
      `podman push ${REPO}:rcb-abababababab failed: Error: writing blob: denied: not authorized to perform ecr:InitiateLayerUpload`,
    );

    ecrMock.on(GetAuthorizationTokenCommand).rejects(new Error('User is not authorized to perform: ecr:GetAuthorizationToken'));
    await expect(cloudPushImage({ stackName: 'Rcb' }, setup().deps)).rejects.toThrow(
      'ECR GetAuthorizationToken failed: User is not authorized to perform: ecr:GetAuthorizationToken',
    );
    ecrMock.on(GetAuthorizationTokenCommand).resolves({ authorizationData: [{ authorizationToken: Buffer.from(`AWS:${PASSWORD}`).toString('base64') }] });

    ecrMock.on(DescribeImagesCommand).resolves({ imageDetails: [] });
    await expect(cloudPushImage({ stackName: 'Rcb' }, setup().deps)).rejects.toThrow(
      /pushed .*:rcb-abababababab, but ECR reports no digest for tag rcb-abababababab/,
    );

    cfnMock.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'Rcb', CreationTime: new Date(), StackStatus: 'UPDATE_COMPLETE', Outputs: [] }] });
    await expect(cloudPushImage({ stackName: 'Rcb' }, setup().deps)).rejects.toThrow(/stack Rcb has no output ImageRepositoryUri/);
  });

  it('parses repository URIs and finds podman before docker', () => {
    expect(parseRepositoryUri(REPO, 'x')).toEqual({ registry: REGISTRY, name: 'rcb-evaluator-abc' });
    expect(() => parseRepositoryUri('docker.io/library/node', '--repository')).toThrow(/--repository: expected an ECR repository URI/);
    expect(() => parseRepositoryUri(`${REPO}:tag`, '--repository')).toThrow(/expected an ECR repository URI/);
    const t = setup(['podman', 'docker']);
    expect(findEngine(undefined, t.deps.env!).engine).toBe('podman');
  });
});
