// Child processes for the benchmark: the servers under load run outside the load generator's
// event loop, and their CPU time is read from /proc so the table can say how busy they were.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export const HOST = '127.0.0.1';

/** A port the kernel just handed out on 127.0.0.1 (closed again, so the child can take it). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export interface Child {
  process: ChildProcess;
  pid: number;
  /** Everything the child wrote so far, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

export function startChild(args: string[], env: NodeJS.ProcessEnv, cwd: string): Child {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  if (child.pid === undefined) throw new Error(`could not start ${args.join(' ')}`);
  return {
    process: child,
    pid: child.pid,
    output: () => output,
    stop: () => stopChild(child),
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) =>
    child.once('exit', (code, signal) => {
      if (code !== 0) process.stderr.write(`pid ${child.pid} exited with ${signal ?? `code ${code}`}\n`);
      done();
    }),
  );
  child.kill('SIGTERM');
  const timer = setTimeout(() => {
    process.stderr.write(`pid ${child.pid} still running 10 s after SIGTERM: SIGKILL\n`);
    child.kill('SIGKILL');
  }, 10_000);
  await exited;
  clearTimeout(timer);
}

/** Resolves with the first stdout line matching `pattern`; rejects if the child exits first. */
export function waitForLine(child: Child, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  return new Promise((resolveLine, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const match = buffered.match(pattern);
      if (match) finish(() => resolveLine(match));
    };
    const onExit = () => finish(() => reject(new Error(`child exited before ready:\n${child.output()}`)));
    const timer = setTimeout(
      () => finish(() => reject(new Error(`child not ready after ${timeoutMs} ms:\n${child.output()}`))),
      timeoutMs,
    );
    const finish = (settle: () => void) => {
      clearTimeout(timer);
      child.process.stdout!.off('data', onData);
      child.process.off('exit', onExit);
      settle();
    };
    child.process.stdout!.on('data', onData);
    child.process.once('exit', onExit);
  });
}

/** Polls `url` until it answers 200; the gateway's /v1/health answers once migrations are done. */
export async function waitForHttp(child: Child, url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.process.exitCode !== null) throw new Error(`server exited before ready:\n${child.output()}`);
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready after ${timeoutMs} ms:\n${child.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Clock ticks per second of /proc's CPU counters (USER_HZ): 100 on Linux unless rebuilt. */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) the process has used so far, or NaN where /proc is missing. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** Machine-wide CPU counters (busy and total ticks over all cores), from /proc/stat. */
/** A process's resident memory now (VmRSS, /proc), in MB. */
export function residentMb(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

export function machineCpu(): { busy: number; total: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}
