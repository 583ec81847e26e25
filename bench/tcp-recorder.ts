/**
 * A recording TCP proxy on 127.0.0.1 for the round-trip bench (bench/round-trips.bench.ts): it
 * forwards bytes unchanged (the Host header too, so SigV4 signatures and the relay's own URLs
 * still hold) and logs, with timestamps, every connection it accepts and every HTTP/1.1
 * exchange on it: when the client's request started, when the first byte of the answer came
 * back, when the last byte went either way, and the bytes each way.
 *
 * Exchanges are told apart by the direction of the traffic: client bytes after server bytes
 * start a new one (HTTP/1.1 without pipelining, which neither curl nor Node nor workerd uses).
 * An `Expect: 100-continue` therefore shows as two exchanges, which is what it costs: a round
 * trip before the body may go.
 */
import { createConnection, createServer, type AddressInfo, type Socket } from "node:net";
import { performance } from "node:perf_hooks";

/** One request and its answer on a connection, times in ms on `performance.now()`'s clock. */
export interface Exchange {
  /** The proxy's name for where it forwards (`relay`, `s3`, `telegram`). */
  proxy: string;
  connection: number;
  /** 0 for the first exchange on its connection (the one that waited for TCP's handshake). */
  index: number;
  /** The request line (method and path, the query left out), or `(body)` after a 100 Continue. */
  line: string;
  /** Signed in its query string: a presigned URL a client was handed (S3's `X-Amz-Signature`). */
  presigned: boolean;
  /** The connection's accept time, for the first exchange; its request's first byte otherwise. */
  start: number;
  requestStart: number;
  /** The answer's first byte; NaN when none came. */
  firstResponseByte: number;
  /** The last byte either way. */
  end: number;
  bytesUp: number;
  bytesDown: number;
}

export interface RecordingProxy {
  name: string;
  /** `http://127.0.0.1:<port>`: give this to whoever should go through the proxy. */
  url: string;
  /** Every exchange seen so far, including ones still running. */
  exchanges(): Exchange[];
  /** When a byte last went through, either way. */
  lastActivity(): number;
  /** Forgets everything recorded so far (open connections keep being recorded). */
  clear(): void;
  stop(): Promise<void>;
}

/** A proxy named `name` in front of `target` (an `http://host:port` origin). */
export async function startRecordingProxy(name: string, target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  let recorded: Exchange[] = [];
  let connections = 0;
  let lastActivity = performance.now();
  const sockets = new Set<Socket>();

  const server = createServer((client) => {
    const accepted = performance.now();
    const connection = ++connections;
    let current: Exchange | undefined;
    let count = 0;
    const touch = () => (lastActivity = performance.now());
    const server = createConnection({
      host: upstream.hostname,
      port: Number(upstream.port),
    });
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {
        client.destroy();
        server.destroy();
      });
    }
    client.on("data", (chunk: Buffer) => {
      const now = touch();
      if (!current || current.bytesDown > 0) {
        current = newExchange(name, connection, count, now, count === 0 ? accepted : now, chunk);
        count++;
        recorded.push(current);
      }
      current.bytesUp += chunk.length;
      current.end = now;
      if (!server.write(chunk)) client.pause();
    });
    server.on("drain", () => client.resume());
    server.on("data", (chunk: Buffer) => {
      const now = touch();
      if (current) {
        if (current.bytesDown === 0) current.firstResponseByte = now;
        current.bytesDown += chunk.length;
        current.end = now;
      }
      if (!client.write(chunk)) server.pause();
    });
    client.on("drain", () => server.resume());
    client.on("end", () => server.end());
    server.on("end", () => client.end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    exchanges: () => [...recorded],
    lastActivity: () => lastActivity,
    clear: () => void (recorded = []),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function newExchange(
  proxy: string,
  connection: number,
  index: number,
  requestStart: number,
  start: number,
  chunk: Buffer,
): Exchange {
  const head = chunk.subarray(0, 4096).toString("latin1");
  const requestLine = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r\n/.exec(head);
  const target = requestLine?.[2] ?? "";
  return {
    proxy,
    connection,
    index,
    line: requestLine ? `${requestLine[1]} ${target.split("?")[0]}` : "(body)",
    presigned: /[?&]X-Amz-Signature=/i.test(target),
    start,
    requestStart,
    firstResponseByte: NaN,
    end: requestStart,
    bytesUp: 0,
    bytesDown: 0,
  };
}
