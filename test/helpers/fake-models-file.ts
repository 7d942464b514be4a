/**
 * The registry file of a fake paid model (`fake`, OpenAI-compatible, cheap list prices) at a
 * local endpoint, as the crash-recovery and bundled-cloud tests give `--models-file` or
 * `rcb:modelsFile`.
 */
export function fakeModelsYaml(baseUrl: string, keyEnv: string): string {
  return [
    'models:',
    '  - id: fake',
    '    provider: openai-compatible',
    '    model: fake-chat',
    `    base_url: ${baseUrl}`,
    `    api_key_env: ${keyEnv}`,
    '    params: { max_output_tokens: 1000, temperature: 0 }',
    '    prices: { input: 1, cached_input: 0.1, output: 2, as_of: "2026-01-01" }',
    '    knowledge_cutoff: "2024-01"',
    '    context_window: 1000000',
    '',
  ].join('\n');
}
