/** The flags that name a deployed stack, read by every `rcb cloud` command (SDK-free: read at registration). */
export interface StackFlags {
  stackName: string;
  region?: string;
}

export const DEFAULT_STACK_NAME = 'Rcb';
