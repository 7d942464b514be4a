/**
 * The Lambda handlers' and the container entry point's input contracts. (Their behaviour
 * is tested in test/functions and test/cloud.)
 */
import { join, relative } from 'node:path';
import { buildSync } from 'esbuild';
import { CREDENTIAL_VARIABLES, loadShardEnv } from '../../container/entry';
import { REPO } from '../helpers/cli';
import { sandboxEnvironment } from '../../adapters/executor/environment';
import { handler as checkProgress } from '../../functions/check-progress/handler';
import { CLOUD_STAGES } from '../../app/stages';

// The handlers log their refusal through Powertools (JSON lines on stdout); keep test output clean.
let stdout: jest.SpyInstance;
beforeEach(() => {
  stdout = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
});
afterEach(() => stdout.mockRestore());

describe('workflow handlers', () => {
  it('rejects an input without a run id', async () => {
    // The environment the template gives CheckProgress: its configuration is read (once) before the event.
    const saved = { ...process.env };
    Object.assign(process.env, { RCB_TABLE: 't', RCB_BUCKET: 'b', RCB_GENERATION_TIMEOUT_SEC: '60', AWS_REGION: 'us-east-1' });
    try {
      await expect(checkProgress({})).rejects.toThrow(/runId/);
    } finally {
      process.env = saved;
    }
  });
});

describe('stage handlers', () => {
  it("bundle their own stage of the table only, and no CDK: a handler's entry is imported from its own file", () => {
    for (const stage of Object.values(CLOUD_STAGES)) {
      const result = buildSync({
        entryPoints: [join(REPO, 'functions', stage.function.dir, 'handler.ts')],
        bundle: true,
        platform: 'node',
        target: 'node22',
        format: 'cjs',
        write: false,
        metafile: true,
        logLevel: 'silent',
        outfile: join(REPO, 'handler.js'),
      });
      const inputs = Object.keys(result.metafile.inputs).map((p) => relative(REPO, join(REPO, p)));
      const stages = inputs.filter((p) => p.startsWith('app/stages/')).sort();
      expect([stage.function.dir, stages]).toEqual([stage.function.dir, [`app/stages/${stage.function.dir}.ts`, 'app/stages/cloud-stage.ts'].sort()]);
      expect(inputs.filter((p) => /^(node_modules\/(aws-cdk-lib|constructs|cdk-nag)\/|infra\/)/.test(p))).toEqual([]);
    }
  });
});

describe('container entry point', () => {
  it('bundles no model client: a shard loads only what evaluating needs at each start', () => {
    // Act: the entry point's bundle as container/build-app.sh makes it, with its inputs listed.
    const result = buildSync({
      entryPoints: [join(REPO, 'container', 'entry.ts')],
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      write: false,
      metafile: true,
      logLevel: 'silent',
      outfile: join(REPO, 'entry.js'),
    });

    // Assess: neither the providers' modules nor their SDKs (2.5 MB of the 5.3 MB bundle they were).
    const inputs = Object.keys(result.metafile.inputs).map((p) => relative(REPO, join(REPO, p)));
    expect(inputs).toContain('app/stages/evaluate-shard.ts');
    const models = inputs.filter(
      (p) => p.startsWith('adapters/models/') || /^node_modules\/(openai|@anthropic-ai|@google\/genai|@aws-sdk\/client-bedrock)/.test(p),
    );
    expect(models).toEqual([]);
  });

  it('reads the shard from the environment the task definition and the overrides set', () => {
    expect(loadShardEnv({ RCB_RUN_ID: 'r1', RCB_SHARD: 'paper-a', RCB_TABLE: 't', RCB_BUCKET: 'b', RCB_SCRATCH: '/scratch' })).toEqual({
      runId: 'r1',
      paper: 'paper-a',
      ref: { paper: 'paper-a' },
      table: 't',
      bucket: 'b',
      scratch: '/scratch',
      sandbox: 'auto',
    });
  });

  it("reads RCB_SANDBOX into the executor's sandbox, and refuses any other value naming the variable", () => {
    const base = { RCB_RUN_ID: 'r1', RCB_SHARD: 'paper-a', RCB_TABLE: 't', RCB_BUCKET: 'b' };
    for (const kind of ['auto', 'bwrap', 'uid', 'none'] as const) {
      expect(loadShardEnv({ ...base, RCB_SANDBOX: kind }).sandbox).toBe(kind);
    }
    expect(() => loadShardEnv({ ...base, RCB_SANDBOX: 'nsjail' })).toThrow('rcb: RCB_SANDBOX must be one of auto, bwrap, uid, none (got "nsjail")');
    expect(() => loadShardEnv({ ...base, RCB_SANDBOX: 'UID' })).toThrow(/RCB_SANDBOX/);
  });

  it('reads the model and slice of a shard cut finer than its paper, and refuses one of another paper', () => {
    const env = { RCB_RUN_ID: 'r1', RCB_SHARD: 'paper-a', RCB_TABLE: 't', RCB_BUCKET: 'b' };
    expect(loadShardEnv({ ...env, RCB_SHARD_REF: '{"paper":"paper-a","model":"gpt-5.4","part":1,"parts":3}' }).ref).toEqual({
      paper: 'paper-a',
      model: 'gpt-5.4',
      part: 1,
      parts: 3,
    });
    expect(() => loadShardEnv({ ...env, RCB_SHARD_REF: '{"paper":"paper-b"}' })).toThrow('RCB_SHARD_REF names paper paper-b, RCB_SHARD paper-a');
  });

  it('names every missing variable', () => {
    expect(() => loadShardEnv({ RCB_TABLE: 't' })).toThrow('missing environment variable(s) RCB_RUN_ID, RCB_SHARD, RCB_BUCKET');
  });
});

describe('container test processes', () => {
  it("never receive the task role's credential variables, even when asked to pass them", () => {
    const parentEnv = Object.fromEntries(CREDENTIAL_VARIABLES.map((n) => [n, 'secret']));
    const env = sandboxEnvironment({ parentEnv, allow: [...CREDENTIAL_VARIABLES], warn: () => undefined });
    expect(Object.keys(env).filter((k) => k.startsWith('AWS_'))).toEqual([]);
  });
});
