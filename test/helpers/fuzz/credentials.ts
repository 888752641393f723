// The fuzzer's credentials: every kind of API key (live, test, read-only, IP-limited, revoked,
// made-up, malformed, none), admin token (root, viewer, revoked operator, made-up, none) and bot
// webhook secret (right, wrong, none); and which of them are a stranger's (sent from 127.0.0.2).
import { chance, pick, type Random } from './random.ts';
import type { FuzzWorld } from './types.ts';
import type { Operation } from './values.ts';

export function publicAuth(r: Random, w: FuzzWorld, op: Operation): Record<string, string> {
  if (op.security?.some((s) => 'telegramSecret' in s)) {
    const roll = r();
    const secret = roll < 0.7 ? w.botSecret : roll < 0.85 ? 'wrong-secret' : null;
    return secret ? { 'x-telegram-bot-api-secret-token': secret } : {};
  }
  return keyAuth(r, w);
}

export function keyAuth(r: Random, w: FuzzWorld): Record<string, string> {
  const roll = r();
  const key =
    roll < 0.35
      ? w.keys.test
      : roll < 0.5
        ? w.keys.live
        : roll < 0.6
          ? w.keys.readOnly
          : roll < 0.67
            ? w.keys.ipLimited
            : roll < 0.74
              ? w.keys.revoked
              : roll < 0.8
                ? `rk_test_${'A'.repeat(32)}`
                : roll < 0.85
                  ? pick(r, ['rk_live_short', 'sk_test_x', '', 'rk_test_\u00e9', 'rk_test_%00'])
                  : null;
  if (key === null)
    return chance(r, 0.5) ? {} : { authorization: pick(r, ['Basic YTpi', 'Bearer', 'bearer  x']) };
  return { authorization: `Bearer ${key}` };
}

export function adminAuth(r: Random, w: FuzzWorld): Record<string, string> {
  const roll = r();
  const token =
    roll < 0.6
      ? w.admin.root
      : roll < 0.72
        ? w.admin.viewer
        : roll < 0.8
          ? w.admin.revoked
          : roll < 0.88
            ? `adm_${'x'.repeat(40)}`
            : null;
  return token === null ? {} : { authorization: `Bearer ${token}` };
}

/** Whether the request's credential is not one the world issued and still honours. */
export function isStranger(w: FuzzWorld, headers: Record<string, string>): boolean {
  const auth = headers.authorization;
  if (headers['x-telegram-bot-api-secret-token'] === w.botSecret && w.botSecret) return false;
  if (auth === undefined) return true;
  const good = [w.keys.live, w.keys.test, w.keys.readOnly, w.keys.ipLimited, w.admin.root, w.admin.viewer];
  return !good.some((k) => auth === `Bearer ${k}`);
}
