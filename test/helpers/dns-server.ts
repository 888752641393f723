// A tiny DNS server on 127.0.0.1 (UDP) for the webhook resolver's tests: names of `records`
// answer with their addresses, names of `silent` (or every name, with `silentAll`) are never
// answered, anything else is NXDOMAIN. Every query received is recorded.
import { createSocket, type RemoteInfo } from 'node:dgram';
import ipaddr from 'ipaddr.js';

export interface DnsQuery {
  name: string;
  type: 'A' | 'AAAA' | number;
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, as WEBHOOK_DNS_SERVERS takes it. */
  address: string;
  queries: DnsQuery[];
  close(): Promise<void>;
}

export async function startDnsServer(opts: {
  records?: Record<string, string[]>;
  silent?: (name: string) => boolean;
}): Promise<TestDnsServer> {
  const socket = createSocket('udp4');
  const queries: DnsQuery[] = [];
  socket.on('message', (msg: Buffer, rinfo: RemoteInfo) => {
    if (msg.length < 12) return;
    let offset = 12;
    const labels: string[] = [];
    while (offset < msg.length && msg[offset] !== 0) {
      const len = msg[offset]!;
      labels.push(msg.subarray(offset + 1, offset + 1 + len).toString('latin1'));
      offset += 1 + len;
    }
    offset += 1;
    const qtype = msg.readUInt16BE(offset);
    const questionEnd = offset + 4;
    const name = labels.join('.').toLowerCase();
    queries.push({ name, type: qtype === 1 ? 'A' : qtype === 28 ? 'AAAA' : qtype });
    if (opts.silent?.(name)) return;

    const wanted = (opts.records?.[name] ?? []).filter(
      (a) => (ipaddr.parse(a).kind() === 'ipv4' ? 1 : 28) === qtype,
    );
    const known = opts.records?.[name] !== undefined;
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    header.writeUInt16BE(0x8180 | (known ? 0 : 3), 2); // response, recursion desired+available, NXDOMAIN when unknown
    header.writeUInt16BE(1, 4); // one question
    header.writeUInt16BE(wanted.length, 6);
    const answers = wanted.map((a) => {
      const bytes = Buffer.from(ipaddr.parse(a).toByteArray());
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // name: pointer to the question
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6); // ttl
      rr.writeUInt16BE(bytes.length, 10);
      return Buffer.concat([rr, bytes]);
    });
    socket.send(
      Buffer.concat([header, msg.subarray(12, questionEnd), ...answers]),
      rinfo.port,
      rinfo.address,
    );
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
