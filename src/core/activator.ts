// The seam to the game's redemption backend (docs/reference/redeem.md#activators).
import type { ActivationStatus, Mode } from './vocabulary.ts';

export interface ActivationOutcome {
  status: ActivationStatus;
  /** True when the code was sent but the answer never came: it may have been consumed. */
  unknown?: boolean;
  category?: string | null;
  uc?: number | null;
  /**
   * With an `activated` answer of an activator whose memory lives in this database: the row its
   * answer rests on, which the activator does not write itself. The commit that records the
   * outcome writes it (redeem_record_outcome), so the memory and the outcome are one commit and
   * one round trip, and a crash before that commit leaves no memory (a status check then says
   * "not redeemed"). When the row is there already (the code was activated before, or by a
   * request that committed first), the answer was provisional and wrong: the outcome is recorded
   * as `code_used`, and billed as one.
   */
  memory?: ActivationMemory;
}

/** An activated code in an activator's memory: per mode, by the code's keyed hash. */
export interface ActivationMemory {
  mode: Mode;
  /** Under the keyring's first key: a new row's. */
  codeHash: string;
  /** Under the ring's older keys: a row written before a rotation is found by these too. */
  olderHashes?: string[];
  playerId: string;
}

export interface CodeStatus {
  /** Whether the upstream has redeemed the code, and for which player when it says. */
  redeemed: boolean;
  playerId?: string | null;
}

/**
 * What a check (`Activator.check`) says of a code, without activating it (docs/reference/bot.md#commands): `valid`
 * (a redeem would activate it now), `used` (redeemed before), `invalid` (the upstream does not
 * know it) or `unknown` (the upstream cannot tell, or did not answer).
 */
export type CodeCheckState = 'valid' | 'used' | 'invalid' | 'unknown';

export interface Activator {
  readonly name: string;
  /**
   * `customerId` (when known) lets an activator share its capacity fairly between customers
   * (docs/reference/redeem.md#activators); it is never sent upstream.
   */
  activate(input: {
    mode: Mode;
    code: string;
    playerId: string;
    customerId?: number;
  }): Promise<ActivationOutcome>;
  /** Asks whether a code was redeemed, to settle an unknown outcome; null when it cannot tell. */
  status(input: { mode: Mode; code: string }): Promise<CodeStatus | null>;
  /**
   * Asks what a redeem of the code would answer, without redeeming it: never activates,
   * consumes, bills or counts anything. `unknown` when the upstream cannot tell or does not
   * answer (an error, a timeout, an open circuit breaker): upstream trouble never throws.
   * `customerId` (when known) shares capacity fairly as `activate` does; it is never sent upstream.
   */
  check(input: { mode: Mode; code: string; customerId?: number }): Promise<CodeCheckState>;
}
