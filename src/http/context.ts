// The context as the process fills it: core's AppContext with the whole configuration and the
// Prometheus metrics (the HTTP apps read listener settings and serve /metrics).
import type { Config } from '../config.ts';
import type { AppContext } from '../core/context.ts';
import type { Metrics } from '../metrics/registry.ts';

/** The chat bot as the HTTP apps see it (src/bot/ fills it when BOT_TOKEN is set). */
export interface BotDoor {
  readonly username: string;
  readonly updates: 'polling' | 'webhook';
  /** Acts on one update delivered to POST /bot/updates (at most once, by its update_id). */
  handleUpdate(update: unknown): Promise<void>;
  /** A person's role changed (null: unbound): their chat's command menu follows. Never throws. */
  menuChanged(chatId: number, role: 'owner' | 'staff' | null): Promise<void>;
  /** Sends a plain line to a chat (an operator's decision); never throws, logs a failure. */
  tell(chatId: number, text: string): Promise<void>;
}

export type ServerContext = AppContext<Config, Metrics> & { bot?: BotDoor };
