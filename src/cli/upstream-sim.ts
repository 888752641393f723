// `redeem-gateway upstream-sim`: runs the upstream simulator (docs/upstream-protocol.md) until
// SIGINT or SIGTERM.
import { parseArgs } from 'node:util';
import { createUpstreamSim, type FaultKind, type FaultRule } from '../dev/upstream-sim.ts';

export const UPSTREAM_SIM_HELP = `redeem-gateway upstream-sim [options]

Serves the upstream redemption protocol (docs/upstream-protocol.md) from memory, for trying and
testing ACTIVATOR=http. Codes ending in -<catalog size> activate (LIVE-AB12-660), codes containing
FAIL fail, others are invalid; players starting with 000 are not found.

Options:
  --port N                     listen port [9090]
  --host H                     listen address [127.0.0.1]
  --key K                      bearer key clients must send [UPSTREAM_SIM_KEY]
  --latency-ms N               latency added to every activation [0]
  --fault kind[-stage][=rate]  a fault rule, repeatable; kind: error, hang, reset, garbage,
                               stage: before or after processing [after], rate 0..1 [1]
                               e.g. --fault hang-after=0.05 --fault reset-before=0.01
Faults can also be changed at run time: POST /_sim/faults {"faults": [...]}.
`;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** Parses the options into the simulator's settings; throws UsageError on a bad one. */
export function parseSimArgs(argv: string[], env: NodeJS.ProcessEnv = process.env) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '9090' },
      host: { type: 'string', default: '127.0.0.1' },
      key: { type: 'string' },
      'latency-ms': { type: 'string' },
      fault: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return { help: true as const };
  const port = Number(values.port);
  if (!/^\d+$/.test(values.port) || port > 65535)
    throw new UsageError('--port must be an integer from 0 to 65535');
  const key = values.key ?? env.UPSTREAM_SIM_KEY;
  if (!key) throw new UsageError('a key is required: --key K or UPSTREAM_SIM_KEY');
  const faults: FaultRule[] = [];
  if (values['latency-ms'] !== undefined) {
    if (!/^\d{1,7}$/.test(values['latency-ms'])) throw new UsageError('--latency-ms must be a whole number');
    faults.push({ kind: 'latency', stage: 'before', ms: Number(values['latency-ms']) });
  }
  for (const spec of values.fault ?? []) {
    const m = /^(error|hang|reset|garbage)(?:-(before|after))?(?:=(0|1|0?\.\d+|1\.0*))?$/.exec(spec);
    if (!m) throw new UsageError(`--fault ${spec}: expected kind[-stage][=rate], e.g. hang-after=0.05`);
    faults.push({
      kind: m[1] as FaultKind,
      stage: (m[2] as 'before' | 'after' | undefined) ?? 'after',
      rate: m[3] === undefined ? 1 : Number(m[3]),
    });
  }
  return { help: false as const, port, host: values.host, key, faults };
}

export async function runUpstreamSim(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseSimArgs>;
  try {
    parsed = parseSimArgs(argv);
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  if (parsed.help) {
    process.stdout.write(UPSTREAM_SIM_HELP);
    return;
  }
  const sim = createUpstreamSim({ key: parsed.key, faults: parsed.faults });
  const url = await sim.listen({ port: parsed.port, host: parsed.host });
  process.stdout.write(
    `upstream simulator listening on ${url}${parsed.faults.length ? ` with ${parsed.faults.length} fault rule(s)` : ''}\n`,
  );
  const stop = () => {
    void sim.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
