/**
 * Sweep files and `rcb sweep`: the file read and checked with file:line errors, the plan's
 * figures, per-model budgets inside the total, and a sweep run as a user runs it against a
 * local Chat Completions endpoint: resumable, with status and reports over its runs.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseSweep, SweepFileError } from '../../core/sweep/sweep-file';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { openRun, planTasks } from '../../core/run/plan';
import { generate } from '../../core/run/generate';
import { openBudgetAccounts, budgetAccountId } from '../../core/run/budget';
import { staticKeySource } from '../../core/keys';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { HostedModels } from '../../adapters/models/hosted-models';
import { parseModelEntry } from '../../adapters/models/registry';
import { loadSweep, planSweep } from '../../bin/commands/sweep-commands';
import { UsageError } from '../../bin/commands/common';
import { resolveRun } from '../../bin/commands/resolve-run';
import { FakeChatEndpoint } from '../reliability/fake-chat-endpoint';
import { startRcb } from '../reliability/run-cli';
import { PSET_MINI, REPO, tempDir } from '../helpers/cli';

function problemsOf(text: string, file = '/sweeps/s.yaml'): string[] {
  try {
    parseSweep(file, text);
  } catch (e) {
    expect(e).toBeInstanceOf(SweepFileError);
    return (e as SweepFileError).problems;
  }
  throw new Error('expected the sweep file to be refused');
}

describe('a sweep file', () => {
  test('is read with its defaults, paths relative to the file', () => {
    const s = parseSweep(
      '/sweeps/frontier.yaml',
      'pset: ../psets/mini\nmodels:\n  - id: gpt-4.1\n  - id: claude-sonnet-4.6\n    mode: batch\n    budget_usd: 3\n',
    );

    expect(s).toMatchObject({
      pset: '/psets/mini',
      out: '/sweeps/sweeps/frontier',
      samples: 1,
      withPaper: true,
      papers: null,
      timeoutSec: 60,
      budgetUsd: null,
    });
    expect(s.batch).toEqual({ pollSeconds: 60, maxRounds: 3, retryInteractively: false });
    expect(s.models).toEqual([
      { id: 'gpt-4.1', name: 'gpt-4.1', params: {}, mode: 'interactive', budgetUsd: null, line: 3 },
      { id: 'claude-sonnet-4.6', name: 'claude-sonnet-4.6', params: {}, mode: 'batch', budgetUsd: 3, line: 4 },
    ]);
  });

  test('problems name the file and the line of the value at fault', () => {
    const problems = problemsOf('samples: 0\nmodels:\n  - id: gpt-4.1\n    mode: fast\n  - id: gpt-4.1\n    budget: 3\n');

    expect(problems).toEqual([
      expect.stringMatching(/^\/sweeps\/s\.yaml:1: samples: Number must be greater than 0$/),
      expect.stringMatching(/^\/sweeps\/s\.yaml:4: models\.0\.mode: Invalid enum value/),
      expect.stringMatching(/^\/sweeps\/s\.yaml:6: models\.1\.budget: unknown key; did you mean "budget_usd"\? \(keys: /),
    ]);
  });

  test('a model named twice, or a model budget above the total, is refused with its line', () => {
    const problems = problemsOf('budget_usd: 2\nmodels:\n  - id: gpt-4.1\n  - id: gpt-4.1\n    budget_usd: 5\n');

    expect(problems).toEqual([
      '/sweeps/s.yaml:4: models.1: "gpt-4.1" is already the name of models.0; give one of them a distinct name',
      "/sweeps/s.yaml:5: models.1.budget_usd: 5 exceeds the sweep's budget_usd (2)",
    ]);
  });

  test('text that is not YAML is refused with its line', () => {
    expect(problemsOf('models:\n  - id: a\n bad: [\n')[0]).toMatch(/^\/sweeps\/s\.yaml:\d+: not valid YAML/);
  });
});

describe('a sweep read against the registry', () => {
  const dir = tempDir('rcb-sweep-load-');
  const load = (text: string) => {
    const file = join(dir, `s${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, `pset: ${PSET_MINI}\n${text}`);
    return { file, load: () => loadSweep(file, staticKeySource({})) };
  };
  const usageError = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(UsageError);
      return (e as Error).message;
    }
    throw new Error('expected a UsageError');
  };

  test('applies the parameters of a named variant, which then has task ids of its own', () => {
    const { load: l } = load('models:\n  - id: gpt-4.1\n  - id: gpt-4.1\n    name: gpt-4.1-t07\n    params: { temperature: 0.7 }\n');

    const { entries, run } = l();

    expect(entries.get('gpt-4.1-t07')!.params.temperature).toBe(0.7);
    expect(entries.get('gpt-4.1')!.params.temperature).toBe(0);
    expect(run.spec.models.map((m) => [m.id, m.params.temperature])).toEqual([
      ['gpt-4.1', 0],
      ['gpt-4.1-t07', 0.7],
    ]);
  });

  test('an unknown model, a bad parameter and batch mode without batch prices are refused with their lines', () => {
    const { file, load: l } = load('models:\n  - id: gpt-9\n  - id: gpt-4.1\n    params: { temperature: 5 }\n  - id: deepseek-chat\n    mode: batch\n');

    const message = usageError(l);

    expect(message).toContain(`${file}:3: model "gpt-9": id: unknown model "gpt-9"`);
    expect(message).toMatch(new RegExp(`${file}:4: model "gpt-4.1": .*temperature`));
    expect(message).toContain(`${file}:6: model "deepseek-chat": mode batch needs`);
  });

  test('a misspelt id gets the nearest name, oracle and empty among those it knows; a misspelt parameter is named once', () => {
    const { file, load: l } = load('models:\n  - id: orcale\n  - id: gpt-4.1\n    params: { temprature: 0.7 }\n');

    const message = usageError(l);

    expect(message).toMatch(
      new RegExp(
        `${file}:3: model "orcale": id: unknown model "orcale" in the model registry; did you mean "oracle"\\? \\(models: .*\\bempty\\b.*\\boracle\\)`,
      ),
    );
    expect(message).toContain(`${file}:4: model "gpt-4.1": params: Unrecognized key(s) in object: 'temprature'`);
    expect(message).not.toContain('params: params:');
  });

  test('a file with an unknown key, a misspelt model id and a misspelt parameter gets all three at once, each with its line', () => {
    const { file, load: l } = load('sampels: 2\nmodels:\n  - id: orcale\n  - id: gpt-4.1\n    params:\n      temprature: 0.7\n');

    const message = usageError(l);

    expect(message.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${file}:2: sampels: unknown key; did you mean "samples"\\?`)),
      expect.stringMatching(new RegExp(`^${file}:4: model "orcale": id: unknown model "orcale" in the model registry; did you mean "oracle"\\?`)),
      `${file}:5: model "gpt-4.1": params: Unrecognized key(s) in object: 'temprature'`,
      '3 problem(s) in the sweep file',
    ]);
  });

  test('shares its run and task ids with rcb run of the same models and flags, so nothing is paid twice', () => {
    const { load: l } = load('samples: 2\npapers: [adamlite]\nbudget_usd: 3\nmodels:\n  - id: gpt-4.1\n  - id: claude-sonnet-4.6\n    mode: batch\n');

    const { run, hosted } = l();
    const single = resolveRun(
      { pset: PSET_MINI, model: ['gpt-4.1', 'claude-sonnet-4.6'], samples: '2', paper: true, papers: 'adamlite', timeout: '60', budget: '3' },
      hosted,
    );

    expect(run.runId).toBe(single.runId);
    expect(planTasks(run.pset, run.spec).map((t) => t.taskId)).toEqual(planTasks(single.pset, single.spec).map((t) => t.taskId));
  });

  test("the plan's figures are the registry estimates, in each model's mode", () => {
    const { load: l } = load('samples: 2\nbudget_usd: 1\nmodels:\n  - id: oracle\n  - id: claude-sonnet-4.6\n    mode: batch\n  - id: gpt-4.1\n');

    const { rows, text } = planSweep(l());

    const [oracle, sonnet, gpt] = rows;
    expect(oracle.estimate).toBeNull();
    expect(sonnet.estimate!.calls).toBe(56);
    expect(sonnet.estimate!.batch!.usd).toBeCloseTo(sonnet.estimate!.usdWithoutCaching / 2, 12);
    const planned = sonnet.estimate!.batch!.usd + gpt.estimate!.usd;
    expect(text).toContain(`as planned (each model in its mode): expected $${planned.toFixed(4)}`);
    expect(text).toMatch(/batch mode time: .*24 h.*up to 3 round\(s\).*at most 72 h/);
  });
});

describe('per-model budgets', () => {
  it('stop a model at its own budget while the others go on, and neither cap is exceeded', async () => {
    // Prepare: two models on one endpoint; the first may afford about a third of its tasks.
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            created: 0,
            model: 'm',
            choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1000, completion_tokens: 100 },
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const entry = (id: string) =>
      parseModelEntry({
        id,
        provider: 'openai-compatible',
        model: 'm',
        base_url: url,
        params: { max_output_tokens: 200 },
        prices: { input: 1, cached_input: 1, output: 1, as_of: '2026-12-01' },
        knowledge_cutoff: '2024-01',
        context_window: 100000,
      });
    const hosted = new HostedModels([entry('a'), entry('b')], staticKeySource({}));
    const a = hosted.resolve('a')!;
    const b = hosted.resolve('b')!;
    const pset = loadPset(PSET_MINI);
    const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
    const spec = {
      psetDigest: pset.digest,
      psetRoot: '',
      models: [
        { id: 'a', params: a.client.params },
        { id: 'b', params: b.client.params },
      ],
      samples: 1,
      withPaper: true,
      papers: null,
      promptTemplateDigest: template.digest,
      timeoutSec: 60,
      budgetUsd: 1,
    };
    const tasks = planTasks(pset, spec);
    const billed = a.cost.billed({ inputTokens: 1000, cachedInputTokens: 0, outputTokens: 100, reasoningTokens: 0 });
    const budgetA = billed * 9;
    const store = new SqliteRunStore(':memory:');
    await openRun(store, { runId: 'r', spec, pset, models: {} });
    try {
      const cappedModels = await openBudgetAccounts(store, 'r', spec, { a: budgetA });

      // Act
      const result = await generate(
        {
          store,
          clients: new Map([
            ['a', a.client],
            ['b', b.client],
          ]),
          costs: new Map([
            ['a', a.cost],
            ['b', b.cost],
          ]),
          cappedModels,
        },
        { runId: 'r', pset, template, withPaper: true, tasks, concurrency: 8 },
      );

      // Assess
      const answers = await store.getCompletions(tasks.map((t) => t.taskId));
      const answeredBy = (m: string) => tasks.filter((t) => t.model === m && answers.has(t.taskId)).length;
      expect(result.budgetExhausted).toBe(true);
      expect(result.exhaustedModels).toEqual(['a']);
      expect(answeredBy('b')).toBe(tasks.filter((t) => t.model === 'b').length);
      expect(answeredBy('a')).toBeGreaterThan(0);
      expect(answeredBy('a')).toBeLessThan(tasks.filter((t) => t.model === 'a').length);
      const account = (await store.getRun(budgetAccountId('r', 'a')))!;
      expect(account.spentUsd).toBeLessThanOrEqual(budgetA + 1e-9);
      expect(account.spentUsd).toBeCloseTo(answeredBy('a') * billed, 9);
      const run = (await store.getRun('r'))!;
      expect(run.spentUsd).toBeLessThanOrEqual(1 + 1e-9);
      expect(run.spentUsd).toBeCloseTo((answeredBy('a') + answeredBy('b')) * billed, 9);
      expect(run.reservedUsd).toBeCloseTo(0, 9);
      expect(account.reservedUsd).toBeCloseTo(0, 9);
    } finally {
      await store.close();
      server.close();
    }
  });
});

/** A local endpoint answering pset-mini's prompts, and a models file at `file` naming it `fake-chat`. */
async function fakeChatModel(pset: ReturnType<typeof loadPset>, file: string): Promise<FakeChatEndpoint> {
  const endpoint = new FakeChatEndpoint(pset, loadTemplate(join(REPO, 'resources', 'prompt-template.txt')), true);
  await endpoint.start();
  const entry = {
    id: 'fake-chat',
    provider: 'openai-compatible',
    model: 'fake',
    base_url: endpoint.url,
    params: { max_output_tokens: 500, temperature: 0 },
    prices: { input: 1, cached_input: 0.5, output: 2, as_of: '2026-12-01' },
    knowledge_cutoff: '2024-01',
    context_window: 100000,
  };
  writeFileSync(file, `models:\n  - ${JSON.stringify(entry)}\n`);
  return endpoint;
}

describe('rcb sweep run, status and report', () => {
  it('runs a sweep of 3 models x 2 samples, resumes it without a call, and reports it in every format', async () => {
    // Prepare: the oracle and two variants of a model served by a local endpoint.
    const pset = loadPset(PSET_MINI);
    const dir = tempDir('rcb-sweep-run-');
    mkdirSync(join(dir, 'conf'));
    const endpoint = await fakeChatModel(pset, join(dir, 'conf', 'models.yaml'));
    const file = join(dir, 'conf', 'sweep.yaml');
    writeFileSync(
      file,
      `pset: ${PSET_MINI}\nsamples: 2\npapers: [adamlite, grouprms]\nbudget_usd: 1\nmodels_file: models.yaml\nout: ../out\nmodels:\n  - id: oracle\n  - id: fake-chat\n    budget_usd: 0.5\n  - id: fake-chat\n    name: fake-chat-warm\n    params: { temperature: 0.5 }\n`,
    );
    const env = { RCB_CACHE_DIR: join(dir, 'cache') };
    const cli = (...args: string[]) => startRcb(args, { env }).done;
    try {
      // Act
      const first = await cli('sweep', 'run', file, '--jobs', '2', '--executor', 'cold');
      const again = await cli('sweep', 'run', file, '--jobs', '2', '--executor', 'cold');
      const status = await cli('sweep', 'status', file);
      const reports = await Promise.all(['table', 'json', 'csv', 'markdown', 'official'].map((f) => cli('sweep', 'report', file, '--format', f)));

      // Assess
      expect(first.status).toBe(0);
      const tasksPerModel = pset.papers.filter((p) => ['adamlite', 'grouprms'].includes(p.meta.id)).reduce((a, p) => a + p.snippets.length, 0) * 2;
      expect(first.stdout).toMatch(new RegExp(`run succeeded .*: ${3 * tasksPerModel} model call\\(s\\)`));
      expect(first.stderr).toContain('as planned (each model in its mode)');
      expect(again.status).toBe(0);
      expect(again.stdout).toMatch(/run succeeded .*: 0 model call\(s\)/);
      expect(status.stdout).toMatch(/run [0-9a-f]{16} \(.*out\/.*\): succeeded, spend \$\d+\.\d{4} of \$1\.00/);
      expect(status.stdout).toMatch(
        new RegExp(
          `  fake-chat \\(interactive\\): ${tasksPerModel}/${tasksPerModel} answered, ${tasksPerModel}/${tasksPerModel} judged, spend \\$\\d+\\.\\d{4} of \\$0\\.50`,
        ),
      );
      expect(status.stdout).toContain(`  fake-chat-warm (interactive): ${tasksPerModel}/${tasksPerModel} answered`);
      expect(reports.map((r) => r.status)).toEqual([0, 0, 0, 0, 0]);
      const [table, json, csv, markdown, official] = reports.map((r) => r.stdout);
      expect(table).toMatch(/^oracle\s+100\.00 ± 0\.00/m);
      const parsed = JSON.parse(json);
      expect(parsed).toHaveLength(1);
      expect(parsed[0].report.models.map((m: { model: string }) => m.model).sort()).toEqual(['fake-chat', 'fake-chat-warm', 'oracle']);
      expect(csv.split('\n')[0]).toContain(',');
      expect(markdown).toContain('|');
      expect(Object.keys(JSON.parse(official).overall_scores).sort()).toEqual(['fake-chat', 'fake-chat-warm', 'oracle']);
    } finally {
      await endpoint.close();
    }
  }, 900_000);

  it('gives the same scores through the emulated cloud as on this machine', async () => {
    // Prepare: one sweep, written twice with different directories.
    const pset = loadPset(PSET_MINI);
    const dir = tempDir('rcb-sweep-emulate-');
    const endpoint = await fakeChatModel(pset, join(dir, 'models.yaml'));
    const body = `pset: ${PSET_MINI}\nsamples: 2\npapers: [adamlite]\nbudget_usd: 1\nmodels_file: models.yaml\nmodels:\n  - id: oracle\n  - id: empty\n  - id: fake-chat\n`;
    writeFileSync(join(dir, 'local.yaml'), body);
    writeFileSync(join(dir, 'emulated.yaml'), body);
    const env = { RCB_CACHE_DIR: join(dir, 'cache') };
    const cli = (...args: string[]) => startRcb(args, { env }).done;
    const scores = async (file: string) =>
      JSON.parse((await cli('sweep', 'report', file, '--format', 'json')).stdout)[0].report.models.map(
        (m: { model: string; scaled: unknown; pass1: unknown; failures: unknown }) => [m.model, m.scaled, m.pass1, m.failures],
      );
    try {
      // Act: the two runs share nothing but the cache folder (whose files are written whole
      // and renamed), so they run side by side.
      const [local, emulated] = await Promise.all([
        cli('sweep', 'run', join(dir, 'local.yaml'), '--jobs', '2', '--executor', 'cold'),
        cli('sweep', 'run', join(dir, 'emulated.yaml'), '--emulate', '--jobs', '2'),
      ]);

      // Assess
      expect(local.status).toBe(0);
      expect([emulated.status, emulated.stderr.slice(-3000)]).toEqual([0, expect.any(String)]);
      expect(emulated.stdout).toContain('sweep run succeeded (emulated)');
      const localScores = await scores(join(dir, 'local.yaml'));
      expect(localScores).toHaveLength(3);
      expect(await scores(join(dir, 'emulated.yaml'))).toEqual(localScores);
    } finally {
      await endpoint.close();
    }
  }, 900_000);
});
