// Pipelined connections for the hot single-statement reads (key lookup, getPet, listPets).
//
// With a pool, every query takes a connection of its own and costs a socket write (and a wakeup
// of that connection's backend) per query. Here a few long-lived connections run in pg's
// pipeline mode (each query sent at once with its own Sync, answered in order), and the
// queries of one event-loop turn leave in one write: the stream is corked when the turn's
// first query is sent and uncorked in the check phase, after every callback of the turn.
// A lost connection fails the queries on it (the caller sees a connection error, 503) and is
// replaced on the next query.
import pg, { type ClientConfig, type QueryConfig, type QueryResultRow } from 'pg';

interface Writable {
  cork(): void;
  uncork(): void;
}

interface Lane {
  client: pg.Client;
  stream: Writable;
  connected: boolean;
  dead: boolean;
  corked: boolean;
}

export interface Pipeline {
  query<R extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]>;
  /** Rows as arrays of column values: no object with named fields is built per row. */
  queryArrays(name: string, text: string, values: unknown[]): Promise<unknown[][]>;
  close(): Promise<void>;
}

export function createPipeline(config: ClientConfig, connections: number): Pipeline {
  const lanes: (Lane | undefined)[] = Array.from({ length: connections }, () => undefined);
  let next = 0;
  let closed = false;

  const open = (): Lane => {
    const client = new pg.Client({ ...config, pipeline: true } as ClientConfig);
    const stream = (client as unknown as { connection: { stream: Writable } }).connection.stream;
    const lane: Lane = { client, stream, connected: false, dead: false, corked: false };
    const die = () => {
      lane.dead = true;
      client.end().catch(() => {});
    };
    // Queries in flight are failed by pg itself with the connection error.
    client.on('error', die);
    client.on('end', die);
    client.connect().then(
      () => {
        lane.connected = true;
      },
      die,
    );
    return lane;
  };

  // The lane of this turn: all of a turn's queries share one write on one connection.
  let current: Lane | undefined;
  const endTurn = (lane: Lane) => {
    current = undefined;
    if (!lane.corked) return;
    lane.corked = false;
    lane.stream.uncork();
  };

  function send<R>(config: { name: string; text: string; values: unknown[]; rowMode?: 'array' }): Promise<R[]> {
    if (closed) return Promise.reject(new Error('Client was closed and is not queryable'));
    let lane = current;
    if (!lane || lane.dead) {
      const i = next;
      next = (next + 1) % lanes.length;
      lane = lanes[i];
      if (!lane || lane.dead) lanes[i] = lane = open();
      current = lane;
      // Before connect completes, pg holds the queries and sends them together anyway.
      if (lane.connected) {
        lane.corked = true;
        lane.stream.cork();
      }
      setImmediate(endTurn, lane);
    }
    return (lane.client.query(config as QueryConfig) as unknown as Promise<{ rows: R[] }>).then((result) => result.rows);
  }

  return {
    query<R extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]> {
      return send<R>({ name, text, values });
    },

    queryArrays(name: string, text: string, values: unknown[]): Promise<unknown[][]> {
      return send<unknown[]>({ name, text, values, rowMode: 'array' });
    },

    async close() {
      closed = true;
      await Promise.all(lanes.map((lane) => lane?.client.end().catch(() => {})));
    },
  };
}
