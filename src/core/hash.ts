// The one digest of secrets kept only as a digest (API keys, operator tokens).
import { createHash } from 'node:crypto';

export const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
