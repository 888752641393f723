// The admin lists' CSV form: asked for with `format=csv` or `Accept: text/csv`, sent
// as an attachment with the same filters as the JSON list, all pages at once.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

/** The query parameter every exportable list accepts. */
export const formatParam = { format: z.enum(['json', 'csv']).optional() };

export function wantsCsv(request: FastifyRequest, format: 'json' | 'csv' | undefined): boolean {
  if (format) return format === 'csv';
  return /\btext\/csv\b/i.test(request.headers.accept ?? '');
}

export function sendCsv(reply: FastifyReply, fileName: string, csv: string, truncated: boolean) {
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${fileName}"`)
    .header('svc-export-truncated', String(truncated))
    .send(csv);
}
