/**
 * A crowd of buyers for the dashboard's launch test, through the service's public HTTP API only:
 * each joins the sale's waiting room, waits for admission, holds one unit and — every other one —
 * confirms it into an order. Runs until every buyer is done (held, bought, or turned away) or
 * `signal` aborts. Returns what each buyer ended with, as the buyers saw it.
 */
export interface BuyerOutcome {
  customer: string;
  /** 'held' (hold kept), 'bought' (hold confirmed), or the error code that stopped the buyer. */
  result: string;
  holdId?: string;
}

/** A route's JSON body, read loosely (as a browser script would) by a crowd that calls many routes. */
// biome-ignore lint/suspicious/noExplicitAny: see above
type Body = any;

async function call(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Body }> {
  const response = await fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: await response.json().catch(() => null) };
}

export async function runBuyers(options: {
  url: string;
  key: string;
  sale: string;
  customers: string[];
  signal: AbortSignal;
  pollMs?: number;
}): Promise<BuyerOutcome[]> {
  const { url, key, sale, signal } = options;
  const pollMs = options.pollMs ?? 250;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const buyer = async (customer: string, index: number): Promise<BuyerOutcome> => {
    await sleep(index * 60); // arrivals spread out a little, as a crowd does
    const joined = await call(url, key, 'POST', `/v1/sales/${sale}/waiting-room/tickets`, { customer });
    if (joined.status !== 201) return { customer, result: joined.json?.error?.code ?? String(joined.status) };
    const token = joined.json.token as string;
    let status = joined.json.status as string;
    while (status === 'waiting' && !signal.aborted) {
      await sleep(pollMs);
      const ticket = await call(
        url,
        key,
        'GET',
        `/v1/sales/${sale}/waiting-room/tickets/${encodeURIComponent(customer)}`,
        undefined,
        { 'dibs-ticket': token },
      );
      status = ticket.json?.status ?? 'error';
    }
    if (status !== 'admitted') return { customer, result: signal.aborted ? 'aborted' : status };
    const held = await call(
      url,
      key,
      'POST',
      `/v1/sales/${sale}/waiting-room/reservations`,
      { customer, quantity: 1, ttlMs: 120_000 },
      { 'dibs-ticket': token },
    );
    if (held.status !== 201 && held.status !== 200)
      return { customer, result: held.json?.error?.code ?? String(held.status) };
    const holdId = held.json.hold.id as string;
    if (index % 2 === 1) return { customer, result: 'held', holdId };
    await sleep(300);
    const order = await call(url, key, 'POST', `/v1/reservations/${holdId}/confirm`);
    return {
      customer,
      result: order.status === 201 ? 'bought' : (order.json?.error?.code ?? String(order.status)),
      holdId,
    };
  };
  return Promise.all(options.customers.map(buyer));
}
