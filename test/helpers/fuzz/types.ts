// The fuzzer's shared shapes: a generated request (FuzzCase), a wrong answer to one (Finding), and
// what the fuzzer knows of the service it talks to (FuzzWorld: addresses, credentials, some ids).

export type Listener = 'public' | 'admin';

export interface FuzzCase {
  listener: Listener;
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /**
   * Sent from another loopback address (127.0.0.2): requests with a bad or no credential, so the
   * per-address limits they run into (the admin lockout, the unknown-key limit) are theirs alone
   * and the requests with good credentials still reach the routes.
   */
  stranger?: boolean;
}

export interface Finding {
  case: FuzzCase;
  status: number;
  problems: string[];
  body: string;
}

/** What the fuzzer knows of the service it talks to: its addresses, credentials and some ids. */
export interface FuzzWorld {
  publicUrl: string;
  adminUrl: string;
  /** Admin routes as `METHOD /path/:param` (from the admin app's own route table). */
  adminRoutes: string[];
  keys: { live: string; test: string; readOnly: string; ipLimited: string; revoked: string };
  admin: { root: string; viewer: string; revoked: string };
  botSecret: string | null;
  ids: { customer: number; spareCustomer: number; keyIds: string[]; jobIds: string[]; operatorIds: string[] };
}
