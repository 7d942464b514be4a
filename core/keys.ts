/**
 * The KeySource port: where provider API keys come from. Locally they are environment
 * variables; in the cloud an adapter reads them from Secrets Manager. Model clients ask
 * by the name of the variable (`OPENAI_API_KEY`, ...) so that one registry entry serves
 * both.
 */
export interface KeySource {
  /** The secret stored under `envName`, or undefined when there is none. */
  get(envName: string): Promise<string | undefined>;
}

/** Keys from environment variables (the local default). Empty values count as missing. */
export function envKeySource(env: NodeJS.ProcessEnv = process.env): KeySource {
  return {
    async get(envName: string): Promise<string | undefined> {
      const value = env[envName];
      return value === undefined || value.trim() === '' ? undefined : value.trim();
    },
  };
}

/** Keys from a fixed map: for tests and for callers that already hold the secrets. */
export function staticKeySource(keys: Record<string, string>): KeySource {
  return {
    async get(envName: string): Promise<string | undefined> {
      return keys[envName];
    },
  };
}
