// Sends N requests of one scenario, one at a time on one kept-alive connection, and fails on
// any answer that is not 2xx: bench/instructions.sh counts the server's instructions meanwhile.
//   node bench/requests.mjs <base url> <key> <list20|get-by-id|create|patch|inventory> <n>
import http from 'node:http';

const [base, key, scenario, count] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const json = { 'content-type': 'application/json' };
const SCENARIOS = {
  list20: () => ({ method: 'GET', path: '/v1/pets?limit=20' }),
  'get-by-id': () => ({ method: 'GET', path: '/v1/pets/7' }),
  create: () => ({ method: 'POST', path: '/v1/pets', headers: json, body: '{"name":"Rex","categoryId":1,"status":"available"}' }),
  // Alternating names: every PATCH changes the pet (a no-op writes nothing).
  patch: (i) => ({ method: 'PATCH', path: '/v1/pets/7', headers: json, body: `{"name":"Rex ${i % 2}"}` }),
  inventory: () => ({ method: 'GET', path: '/v1/store/inventory' }),
};
const make = SCENARIOS[scenario];
if (!make || !(Number(count) > 0)) {
  console.error(`usage: requests.mjs <base url> <key> <${Object.keys(SCENARIOS).join('|')}> <n>`);
  process.exit(2);
}

function send({ method, path, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const request = http.request(new URL(path, base), { method, agent, headers: { ...headers, authorization: `Bearer ${key}` } }, (response) => {
      response.resume();
      response.on('end', () => (response.statusCode < 300 ? resolve() : reject(new Error(`${method} ${path}: ${response.statusCode}`))));
    });
    request.on('error', reject);
    request.end(body);
  });
}

for (let i = 0; i < Number(count); i += 1) await send(make(i));
agent.destroy();
