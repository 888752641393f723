// The one way the stand-in refuses a Bot API call: Telegram's `{ok: false, error_code,
// description, parameters?}`, thrown from wherever the refusal is found and answered by http.ts.

/** A failure answered the Telegram way: `{ok: false, error_code, description, parameters?}`. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly code: number,
    description: string,
    readonly retryAfter?: number,
  ) {
    super(description);
  }
}
