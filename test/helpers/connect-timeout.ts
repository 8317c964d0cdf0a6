// The PostgreSQL connect timeout of apps and CLIs the suites start: CI runs four suites at once
// on 2 cores, where opening a connection has taken over the default 2 s. Suites about outages,
// and storeConfig (whose outage cases rely on the default), set their own.
export const TEST_PG_CONNECT_TIMEOUT_MS = '10000';
