#!/usr/bin/env node
// The `redeem-gateway` command (npm start, npm run cli): runs the compiled JavaScript in dist/,
// building it first when it is missing or older than src/ (bin/build.js). One process, no
// TypeScript loader: a signal sent to it reaches the server itself (docs/reference/running.md#graceful-stop).
import { ensureBuilt } from './build.js';

try {
  ensureBuilt();
} catch (err) {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
}
await import('../dist/cli.js');
