/**
 * Amazon Bedrock batch inference (model invocation jobs) in the Converse format: the
 * requests as one JSONL object in S3 under the entry's batch_s3_uri (`recordId` = task id,
 * `modelInput` = the interactive client's Converse input without the model id), a job
 * over it with the entry's service role, polled; the job writes `<input>.out` under its
 * output prefix, one line per record with its `modelOutput` or its `error`. Records the job
 * did not write (it expired or was stopped first) are open again.
 */
import {
  BedrockClient as BedrockControlClient,
  CreateModelInvocationJobCommand,
  GetModelInvocationJobCommand,
  ListModelInvocationJobsCommand,
  StopModelInvocationJobCommand,
} from '@aws-sdk/client-bedrock';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { BatchClient, BatchItemResult, BatchLimits, BatchRequest, BatchStatus } from '../../../core/batch';
import { ModelError, type ModelErrorKind } from '../../../core/model';
import { asRecord, errorFromStatus, errorFromTransport } from '../provider-errors';
import type { ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { BedrockClient, parseConverse } from './bedrock';
import { asModelRequest } from './openai-batch';

const PROVIDER = 'bedrock batch';
const ENDED = new Set(['Completed', 'PartiallyCompleted', 'Failed', 'Stopped', 'Expired']);

/** Bedrock's error codes in an output record, as the port's kinds. */
function kindOf(code: unknown): ModelErrorKind {
  const c = Number(code);
  if (c === 429) return 'rate_limit';
  if (c >= 500) return 'server';
  if (c === 408) return 'timeout';
  if (c === 400 || c === 422) return 'bad_request';
  if (c === 401 || c === 403) return 'auth';
  return 'other';
}

/** `s3://bucket/prefix` into its bucket and its prefix (without a trailing slash). */
function parseS3Uri(uri: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(uri);
  if (!m) throw new ModelError('bad_request', `${PROVIDER}: batch_s3_uri must be s3://bucket[/prefix] (got ${uri})`);
  return { bucket: m[1], prefix: m[2].replace(/\/+$/, '') };
}

/** A model invocation job's limits: at least 100 records (a test may lower it), at most 50,000. */
/** A job name Bedrock accepts (letters, digits, + - ., at most 63) from an intent id. */
function jobNameOf(intentId: string): string {
  return intentId.replace(/[^a-zA-Z0-9+.-]/g, '-').slice(0, 63);
}

export function bedrockBatchLimits(opts: ProviderClientOptions = {}): BatchLimits {
  return { maxRequests: 50_000, maxPromptChars: 500_000_000, minRequests: opts.aws?.batchMinRequests ?? 100 };
}

export class BedrockBatchClient implements BatchClient {
  readonly id: string;
  readonly limits: BatchLimits;
  private readonly control: BedrockControlClient;
  private readonly s3: S3Client;
  private readonly interactive: BedrockClient;
  private readonly location: { bucket: string; prefix: string };
  private seq = 0;

  constructor(
    private readonly entry: ModelEntry,
    opts: ProviderClientOptions = {},
  ) {
    if (!entry.batch_s3_uri || !entry.batch_role_arn) throw new ModelError('bad_request', `${PROVIDER}: ${entry.id} needs batch_s3_uri and batch_role_arn`);
    this.id = entry.id;
    this.location = parseS3Uri(entry.batch_s3_uri);
    this.limits = bedrockBatchLimits(opts);
    const region = opts.aws?.region ?? entry.region;
    this.control = new BedrockControlClient({ region, endpoint: entry.base_url, credentials: opts.aws?.credentials });
    this.s3 = new S3Client({
      region,
      credentials: opts.aws?.credentials,
      ...(opts.aws?.s3Endpoint ? { endpoint: opts.aws.s3Endpoint, forcePathStyle: true } : {}),
    });
    this.interactive = new BedrockClient({ ...entry, prompt_cache: false }, undefined, opts);
  }

  async submit(requests: BatchRequest[], signal?: AbortSignal, intentId?: string): Promise<string> {
    // The job's name is rcb's intent id when there is one: findByIntent looks the job up by it.
    const jobName = intentId ? jobNameOf(intentId) : `rcb-${this.entry.id.replace(/[^a-zA-Z0-9-]/g, '-')}-${Date.now()}-${++this.seq}`.slice(0, 63);
    const key = `${this.location.prefix ? `${this.location.prefix}/` : ''}${jobName}/input.jsonl`;
    const body = `${requests
      .map((r) => {
        const { modelId: _modelId, ...modelInput } = this.interactive.input(asModelRequest(r));
        return JSON.stringify({ recordId: r.customId, modelInput });
      })
      .join('\n')}\n`;
    return this.call(async () => {
      await this.s3.send(new PutObjectCommand({ Bucket: this.location.bucket, Key: key, Body: body, ContentType: 'application/jsonl' }), {
        abortSignal: signal,
      });
      const job = await this.control.send(
        new CreateModelInvocationJobCommand({
          jobName,
          roleArn: this.entry.batch_role_arn!,
          modelId: this.entry.model,
          modelInvocationType: 'Converse',
          timeoutDurationInHours: 24,
          inputDataConfig: { s3InputDataConfig: { s3Uri: `s3://${this.location.bucket}/${key}`, s3InputFormat: 'JSONL' } },
          outputDataConfig: { s3OutputDataConfig: { s3Uri: `s3://${this.location.bucket}/${key.replace(/input\.jsonl$/, 'output/')}` } },
        }),
        { abortSignal: signal },
      );
      if (!job.jobArn) throw new ModelError('malformed_response', `${PROVIDER}: the created job has no ARN`);
      return job.jobArn;
    });
  }

  /** The job named after the intent id (ListModelInvocationJobs by name). */
  async findByIntent(intentId: string, signal?: AbortSignal): Promise<string | null> {
    const name = jobNameOf(intentId);
    const listed = await this.call(() =>
      this.control.send(new ListModelInvocationJobsCommand({ nameContains: name, maxResults: 100 }), { abortSignal: signal }),
    );
    return listed.invocationJobSummaries?.find((j) => j.jobName === name)?.jobArn ?? null;
  }

  async poll(batchId: string, signal?: AbortSignal): Promise<BatchStatus> {
    const job = await this.call(() => this.control.send(new GetModelInvocationJobCommand({ jobIdentifier: batchId }), { abortSignal: signal }));
    const status = String(job.status ?? 'Submitted');
    return { state: ENDED.has(status) ? 'ended' : 'pending', providerState: status };
  }

  async results(batchId: string, signal?: AbortSignal): Promise<BatchItemResult[]> {
    const job = await this.call(() => this.control.send(new GetModelInvocationJobCommand({ jobIdentifier: batchId }), { abortSignal: signal }));
    const out = job.outputDataConfig?.s3OutputDataConfig?.s3Uri;
    if (!out) return [];
    const { bucket, prefix } = parseS3Uri(out);
    const listed = await this.call(() => this.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }), { abortSignal: signal }));
    const results: BatchItemResult[] = [];
    for (const o of listed.Contents ?? []) {
      if (!o.Key?.endsWith('.jsonl.out')) continue; // manifest.json.out and the like
      const text = await this.call(async () =>
        (await this.s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }), { abortSignal: signal })).Body!.transformToString(),
      );
      for (const line of text.split('\n')) if (line.trim()) results.push(item(JSON.parse(line)));
    }
    return results;
  }

  async cancel(batchId: string, signal?: AbortSignal): Promise<void> {
    await this.call(() => this.control.send(new StopModelInvocationJobCommand({ jobIdentifier: batchId }), { abortSignal: signal }));
  }

  private async call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      if (err instanceof ModelError) throw err;
      const e = asRecord(err) ?? {};
      const status = asRecord(e.$metadata)?.httpStatusCode;
      if (typeof status === 'number' && status >= 400) throw errorFromStatus(PROVIDER, status, `${String(e.name ?? '')}: ${String(e.message ?? '')}`);
      throw errorFromTransport(PROVIDER, err) ?? new ModelError('other', `${PROVIDER}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

function item(line: unknown): BatchItemResult {
  const l = asRecord(line) ?? {};
  const customId = String(l.recordId);
  const error = asRecord(l.error);
  if (error)
    return {
      customId,
      outcome: 'errored',
      error: { kind: kindOf(error.errorCode), message: `${PROVIDER}: ${String(error.errorCode ?? '')}: ${String(error.errorMessage ?? '')}` },
    };
  try {
    return { customId, outcome: 'succeeded', response: parseConverse(l.modelOutput) };
  } catch (e) {
    return { customId, outcome: 'errored', error: { kind: 'malformed_response', message: (e as Error).message } };
  }
}
