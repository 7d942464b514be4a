/**
 * The run-ended event's publisher for the stages that end a run (Aggregate, MarkRunFailed):
 * EventBridge from the function's configuration, none when the stack sets no bus.
 */
import { createEventBridgeClient, type AwsStaticCredentials, type ClientTracer } from '../adapters/aws/clients';
import { EventBridgePublisher } from '../adapters/aws/eventbridge-publisher';
import type { EventsConfig } from '../adapters/aws/runtime/cloud-config';
import type { EventPublisher } from '../core/cloud/run-events';

export function runEventPublisher(
  config: EventsConfig | undefined,
  clients: { credentials?: AwsStaticCredentials; tracer?: ClientTracer } = {},
): EventPublisher | undefined {
  if (!config) return undefined;
  const client = createEventBridgeClient({ region: config.region, endpoint: config.endpoint, ...clients });
  return new EventBridgePublisher(client, { busName: config.busName });
}
