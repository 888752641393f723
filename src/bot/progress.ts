// Reports the bot's manual redeems to their chat (docs/reference/bot.md#commands): edits the confirmation message
// as codes finish (`done: k/n`), then writes the end: one line per code (masked), `activated` and
// `uc_delivered`; for a job stopped by a restart, a final message saying so. Runs in every
// process; each report is claimed in the database first (markReported, markFinished), so none
// is sent twice. Confirmations nobody pressed within 10 minutes end here too.
import type { Api } from 'grammy';
import {
  expireConfirmations,
  markFinished,
  markReported,
  type StartedRedeem,
  startedRedeems,
} from '../core/bot/redeem-reports.ts';
import { maskCode, storedCodeLength } from '../core/crypto/code-crypto.ts';
import { type JobCodeRow, loadJobWithCodes } from '../core/jobs/jobs.ts';
import type { ServerContext } from '../http/context.ts';
import { inMode, labelled, summaryLines, toldApart } from './replies.ts';

const ENDED = new Set(['completed', 'failed', 'interrupted']);

/** One pass: every started redeem with news, and expired confirmations. */
export async function reportProgress(app: ServerContext, api: Api): Promise<void> {
  const now = app.clock.now();
  for (const x of await expireConfirmations(app.db, now)) {
    if (x.messageId === null) continue;
    await api
      .editMessageText(
        x.chatId,
        x.messageId,
        'Confirmation expired after 10 minutes: nothing was run. Send /redeem again.',
      )
      .catch((err: unknown) =>
        app.logger.warn({ err: errorInfo(err) }, 'bot: could not edit an expired confirmation'),
      );
  }
  for (const r of await startedRedeems(app.db)) {
    // An edit is safe to repeat (the same text again changes nothing), so it is made before the
    // report is marked: a process killed in between leaves it to the next pass, never lost. A
    // new message (no message to edit) is not: it is claimed first, so it is sent at most once.
    if (ENDED.has(r.jobStatus)) {
      const text = await finalText(app, r);
      if (r.messageId === null) {
        if (await markFinished(app.db, r, now)) await send(app, api, r.chatId, text);
      } else if (await edit(app, api, r, text, true)) await markFinished(app.db, r, now);
    } else if (r.done > r.reportedDone && r.messageId !== null) {
      const text = inMode(
        r.mode,
        `Redeem running (${r.jobId})`,
        summaryLines(r.summary),
        `done: ${r.done}/${r.total}`,
      );
      if (await edit(app, api, r, text, false)) await markReported(app.db, r, r.reportedDone, r.done);
    }
  }
}

async function send(app: ServerContext, api: Api, chatId: number, text: string) {
  await api
    .sendMessage(chatId, text)
    .catch((err: unknown) => app.logger.warn({ err: errorInfo(err) }, 'bot: could not report a redeem'));
}

/**
 * Edits the redeem's message; true when it shows `text` now (or, for progress, when it cannot be
 * edited any more). A message that cannot be edited (deleted by the person) gets the end as a
 * new message, once (claimed first), and the progress not at all.
 */
async function edit(
  app: ServerContext,
  api: Api,
  r: StartedRedeem,
  text: string,
  final: boolean,
): Promise<boolean> {
  try {
    await api.editMessageText(r.chatId, r.messageId!, text);
    return true;
  } catch (err) {
    const info = errorInfo(err);
    if (/not modified/i.test(info.description ?? '')) return true;
    if (info.code !== 400) {
      app.logger.warn({ err: info, jobId: r.jobId }, 'bot: could not edit a redeem message; trying again');
      return false;
    }
    if (!final) return true;
    app.logger.warn({ err: info, jobId: r.jobId }, 'bot: a redeem message cannot be edited; sending it');
    if (await markFinished(app.db, r, app.clock.now())) await send(app, api, r.chatId, text);
    return false;
  }
}

const shownLength = (row: JobCodeRow) =>
  row.codeLength ?? (row.codeEncrypted ? storedCodeLength(row.codeEncrypted) : row.last4.length);

/** The end of a bot redeem: one line per code, then the totals. */
async function finalText(app: ServerContext, r: StartedRedeem): Promise<string> {
  const loaded = await loadJobWithCodes(app.db, r.jobId, r.customerId);
  const rows = (loaded?.codes ?? []).slice().sort((a, b) => a.position - b.position);
  const done = rows.filter((row) => row.state === 'done');
  const shown = toldApart(done.map((row) => maskCode(row.last4, shownLength(row))));
  const lines = done.map((row, i) => `${shown[i]} ${row.status} ${row.disposition}`);
  const activated = done.filter((row) => row.status === 'activated');
  const notAttempted = rows.length - done.length;
  const head =
    r.jobStatus === 'completed'
      ? `Redeem finished (${r.jobId})`
      : r.jobStatus === 'interrupted'
        ? `Redeem interrupted by a server restart (${r.jobId}): codes not attempted went back to stock, nothing was billed`
        : `Redeem failed on the service side (${r.jobId}): codes not attempted went back to stock, nothing was billed`;
  const totals: [string, number][] = [
    ['activated', activated.length],
    ['uc_delivered', activated.reduce((n, row) => n + (row.uc ?? 0), 0)],
  ];
  if (notAttempted > 0) totals.push(['not_attempted', notAttempted]);
  return inMode(r.mode, head, `player_id: ${r.summary.player_id}`, lines.join('\n'), labelled(totals));
}

/** What a Bot API error may show in a log: its kind and code, never the URL (it holds the token). */
export function errorInfo(err: unknown) {
  const e = err as { name?: string; error_code?: number; description?: string };
  return { name: e?.name, code: e?.error_code, description: e?.description };
}
