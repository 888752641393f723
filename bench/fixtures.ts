// Benchmark fixtures, created through the admin API over HTTP like an operator would.
// Many customers with a couple of test keys each: the burst limit (30 redeems per key per
// sliding 10 s) means real redeem traffic at hundreds of requests a second comes from many
// merchants, and rotating over a few hundred keys keeps every key well under its limit.

export interface FixtureOptions {
  adminUrl: string;
  adminToken: string;
  customers: number;
  keysPerCustomer: number;
  /** Admin requests in flight at once while creating fixtures. */
  concurrency?: number;
}

async function admin(
  o: FixtureOptions,
  method: string,
  path: string,
  body: unknown,
  expect: number,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${o.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${o.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function createCustomerWithKeys(o: FixtureOptions, n: number): Promise<FixtureCustomer> {
  const created = await admin(o, 'POST', '/admin/v1/customers', { name: `bench merchant ${n}` }, 201);
  const id = String(created['customer_id']);
  await admin(
    o,
    'PUT',
    `/admin/v1/customers/${id}/plan`,
    { label: 'bench', daily_limit: null, per_request_usd: '0', overage: true, active: true },
    200,
  );
  const keys: string[] = [];
  for (let k = 0; k < o.keysPerCustomer; k++) {
    const issued = await admin(o, 'POST', `/admin/v1/customers/${id}/keys`, { mode: 'test' }, 201);
    keys.push(String(issued['key']));
  }
  return { customerId: Number(id), keys };
}

/** A fixture customer: its id and its test keys. */
export interface FixtureCustomer {
  customerId: number;
  keys: string[];
}

/** Creates the customers, plans and test keys; returns each customer with its keys, in order. */
export async function createFixtureCustomers(o: FixtureOptions): Promise<FixtureCustomer[]> {
  const customers: FixtureCustomer[] = new Array(o.customers);
  let next = 0;
  const worker = async () => {
    while (next < o.customers) {
      const n = next++;
      customers[n] = await createCustomerWithKeys(o, n);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency ?? 8 }, worker));
  return customers;
}

/** Creates the customers, plans and test keys; returns every key, customers interleaved. */
export async function createFixtures(o: FixtureOptions): Promise<string[]> {
  const perCustomer = await createFixtureCustomers(o);
  // Interleave so consecutive requests go to different customers, as independent merchants would.
  const keys: string[] = [];
  for (let k = 0; k < o.keysPerCustomer; k++) for (const c of perCustomer) keys.push(c.keys[k]!);
  return keys;
}
