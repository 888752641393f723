// The class of a failed webhook attempt, as the event log shows it (docs/reference/webhooks-and-events.md#the-event-log): one of
// timeout, connection, tls, blocked, http_status. Derived from what the sender recorded (the
// status and its one-line error), so rows written before the class was stored read the same.

export type AttemptErrorClass = 'timeout' | 'connection' | 'tls' | 'blocked' | 'http_status';

// Node's and OpenSSL's certificate and handshake error codes start with these.
const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|HOSTNAME_MISMATCH|EPROTO)/;

/** Null for a delivered attempt (a 2xx); else the class of its failure. */
export function attemptErrorClass(status: number | null, error: string | null): AttemptErrorClass | null {
  if (error === null) return status !== null && status >= 200 && status < 300 ? null : 'connection';
  if (status !== null) return 'http_status';
  if (error.startsWith('blocked') || error.startsWith('the registered url')) return 'blocked';
  if (error === 'timed out' || /^UND_ERR_(CONNECT|HEADERS|BODY)_TIMEOUT/.test(error)) return 'timeout';
  if (TLS_CODES.test(error) || /\b(certificate|TLS|SSL)\b/i.test(error)) return 'tls';
  return 'connection';
}
