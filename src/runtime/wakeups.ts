// What the request side tells the background workers: a message was queued, a webhook delivery
// is due. Created before both, so neither needs the other: the services (through the store
// plugin and createServices) announce, the worker runtime listens. Without listeners (workers
// off, or in another process that polls) an announcement costs a loop over an empty array.

export interface Wakeups {
  /** A message was queued: the message worker takes it now instead of at its next poll. */
  messageQueued(): void;
  /** Events were written or a delivery was retried: the webhook worker looks now. */
  deliveryDue(): void;
  /** A change committed events: event streams read the log now. */
  eventsCommitted(): void;
  /** Calls `listener` on each eventsCommitted(); returns the unsubscribe. */
  onEventsCommitted(listener: () => void): () => void;
  /** Calls `listener` on each messageQueued(); returns the unsubscribe. */
  onMessageQueued(listener: () => void): () => void;
  /** Calls `listener` on each deliveryDue(); returns the unsubscribe. */
  onDeliveryDue(listener: () => void): () => void;
}

function channel(): { announce(): void; subscribe(listener: () => void): () => void } {
  let listeners: Array<() => void> = [];
  return {
    announce() {
      for (const listener of listeners) listener();
    },
    subscribe(listener) {
      listeners = [...listeners, listener];
      return () => {
        listeners = listeners.filter((l) => l !== listener);
      };
    },
  };
}

export function createWakeups(): Wakeups {
  const queued = channel();
  const due = channel();
  const committed = channel();
  return {
    eventsCommitted: () => committed.announce(),
    onEventsCommitted: (listener) => committed.subscribe(listener),
    messageQueued: () => queued.announce(),
    deliveryDue: () => due.announce(),
    onMessageQueued: (listener) => queued.subscribe(listener),
    onDeliveryDue: (listener) => due.subscribe(listener),
  };
}
