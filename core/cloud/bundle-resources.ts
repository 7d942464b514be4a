/**
 * What a Lambda bundle carries beside its index.js, in `resources/` (infra/rcb-function.ts
 * copies the files, resourcePath() finds them): the model registry and the default prompt
 * template, and a deployment's own models file when `rcb:modelsFile` names one. In one
 * module, with no CDK or SDK import, so infra and the handlers agree on the names.
 */
export const BUNDLED_RESOURCES = ['models.yaml', 'prompt-template.txt'] as const;

/** Name in the bundle of the deployment's models file (`rcb:modelsFile`), merged over models.yaml. */
export const DEPLOYED_MODELS_FILE = 'models.deployed.yaml';
