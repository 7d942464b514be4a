/**
 * The run-ended event on an EventBridge bus (the account's default bus unless the stack
 * names another): one PutEvents entry, `source: rcb`, the detail as JSON
 * (core/cloud/run-events.ts). A refused entry is an error, as a thrown call is.
 */
import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { RUN_ENDED_EVENT, type EventPublisher, type RunEndedDetail } from '../../core/cloud/run-events';

export interface EventBridgePublisherOptions {
  /** Name or ARN of the bus. @default 'default' */
  busName?: string;
}

export class EventBridgePublisher implements EventPublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly options: EventBridgePublisherOptions = {},
  ) {}

  async publishRunEnded(detail: RunEndedDetail): Promise<void> {
    const out = await this.client.send(
      new PutEventsCommand({
        Entries: [
          {
            Source: RUN_ENDED_EVENT.source,
            DetailType: RUN_ENDED_EVENT.detailType,
            Detail: JSON.stringify(detail),
            EventBusName: this.options.busName ?? 'default',
          },
        ],
      }),
    );
    if (out.FailedEntryCount) {
      const entry = out.Entries?.[0];
      throw new Error(`EventBridge refused the event: ${entry?.ErrorCode ?? 'unknown'} ${entry?.ErrorMessage ?? ''}`.trim());
    }
  }
}
