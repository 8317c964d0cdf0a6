// The webhook worker's attempts in flight, per endpoint and per account. An account holds at
// most its share of the process's attempts (accountLimit), so one account's slow or silent
// receivers cannot take every slot: claims skip accounts and endpoints at their limit. A claimed
// delivery that cannot start waits in memory for a slot of its account, at most one round of
// them (accountLimit per account); beyond that it is given back to the store (released) rather
// than held while its lease runs.
import type { ClaimedDelivery } from '../store/webhooks.js';

const add = (counts: Map<string, number>, key: string, by: number) => {
  const n = (counts.get(key) ?? 0) + by;
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
};

export class DeliverySlots {
  private readonly endpoints = new Map<string, number>();
  private readonly accounts = new Map<string, number>();
  /** Waiting deliveries by account, in claim order. */
  private readonly waiting = new Map<string, ClaimedDelivery[]>();
  inFlight = 0;
  waitingCount = 0;

  constructor(
    private readonly endpointLimit: number,
    private readonly accountLimit: number,
  ) {}

  /** Whether the delivery's endpoint and account both have a free slot. */
  hasRoom = (d: ClaimedDelivery): boolean =>
    (this.endpoints.get(d.endpointId) ?? 0) < this.endpointLimit && (this.accounts.get(d.accountId) ?? 0) < this.accountLimit;

  /** Endpoints at their limit (a claim skips them). */
  busyEndpoints = (): string[] => [...this.endpoints].filter(([, n]) => n >= this.endpointLimit).map(([id]) => id);

  /** Accounts at their share (a claim skips them). */
  busyAccounts = (): string[] => [...this.accounts].filter(([, n]) => n >= this.accountLimit).map(([id]) => id);

  /** `start` now, `wait` for a slot of its account, or `release` it (its account has a round waiting already). */
  take(d: ClaimedDelivery): 'start' | 'wait' | 'release' {
    if (this.hasRoom(d)) return 'start';
    const queue = this.waiting.get(d.accountId) ?? [];
    if (queue.length >= this.accountLimit) return 'release';
    queue.push(d);
    this.waiting.set(d.accountId, queue);
    this.waitingCount++;
    return 'wait';
  }

  started(d: ClaimedDelivery): void {
    this.inFlight++;
    add(this.endpoints, d.endpointId, 1);
    add(this.accounts, d.accountId, 1);
  }

  /** An attempt ended: the first delivery of its account that can start now, if any, takes the slot. */
  finished(d: ClaimedDelivery): ClaimedDelivery | undefined {
    this.inFlight--;
    add(this.endpoints, d.endpointId, -1);
    add(this.accounts, d.accountId, -1);
    const queue = this.waiting.get(d.accountId);
    const at = queue?.findIndex(this.hasRoom) ?? -1;
    if (!queue || at === -1) return undefined;
    const [next] = queue.splice(at, 1);
    if (queue.length === 0) this.waiting.delete(d.accountId);
    this.waitingCount--;
    return next;
  }

  /** Empties the waiting deliveries and returns them (to be released). */
  dropWaiting(): ClaimedDelivery[] {
    const dropped = [...this.waiting.values()].flat();
    this.waitingCount = 0;
    this.waiting.clear();
    return dropped;
  }
}
