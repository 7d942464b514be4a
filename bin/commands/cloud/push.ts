/** `rcb cloud push`: upload a pset as a content-addressed bundle and the prompt template to the stack's bucket. */
import { loadPromptTemplate, loadPsetOrFail, parseList } from '../common';
import { findStackOutputs, stackAdapters, type CloudDeps } from '../../../app/deployed-stack';
import type { StackFlags } from './stack-flags';
import { uploadPsetBundle, uploadPromptTemplate } from '../../../core/cloud/pset-bundle';

export interface PushOptions extends StackFlags {
  pset?: string;
  papers?: string;
  promptTemplate?: string;
}

export async function cloudPush(opts: PushOptions, deps: CloudDeps): Promise<number> {
  const pset = loadPsetOrFail(opts.pset, parseList(opts.papers));
  const template = loadPromptTemplate(opts.promptTemplate);
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { blobs } = stackAdapters(deps, outputs);
  const psetKey = await uploadPsetBundle(blobs, pset);
  const templateKey = await uploadPromptTemplate(blobs, template.text);
  deps.out(
    `pset: s3://${outputs.bucket}/${psetKey} (${pset.papers.length} paper(s), digest ${pset.digest})\nprompt template: s3://${outputs.bucket}/${templateKey}\n`,
  );
  return 0;
}
