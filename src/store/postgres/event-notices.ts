// Event streams on every instance hear a commit through NOTIFY on this channel, sent by the
// process that committed (no trigger: one notice per burst of commits, not one per row). The
// notice only wakes streams: they read the log itself, so a lost notice delays, never loses.
import type { PostgresDatabase } from './driver.js';

export const EVENTS_CHANNEL = 'petstore_events';

/** announceEvents(): one NOTIFY at a time; commits during one in flight share the next. */
export function announcer(db: Pick<PostgresDatabase, 'pool'>): () => void {
  let inFlight = false;
  let again = false;
  const send = () => {
    inFlight = true;
    again = false;
    db.pool.query(`NOTIFY ${EVENTS_CHANNEL}`).then(done, done);
  };
  // A failed notice is dropped: the streams' slow poll still finds the events.
  const done = () => {
    inFlight = false;
    if (again) send();
  };
  return () => {
    if (inFlight) again = true;
    else send();
  };
}
