import * as http from "node:http";
import * as net from "node:net";

/**
 * Bytes one read off a socket may fill: the buffer each connection reuses for every read of a
 * body it hands over (see `SocketBody`).
 */
const READ_BYTES = 256 * 1024;

/** Takes a plain body's bytes as they come off the socket. */
export interface BodySink {
  /** One chunk, valid only during the call (its buffer is reused); what it throws ends the body. */
  bytes(chunk: Buffer): void;
  /** Every byte of the body was taken. */
  end(): void;
  /** The body failed: `bytes` threw, or the connection broke off before the body's end. */
  fail(err: unknown): void;
}

/**
 * A connection whose reads go into one buffer it reuses (`onread`), not a new buffer per read
 * through a stream. While node:http reads a response's head, each read is handed to its parser
 * as a copy (the head, and any answer that is not a plain body, are node:http's as usual). Once
 * `adoptBody` takes a plain body (an identity 200 or 206 with a Content-Length, to a GET that
 * asked for it), the reads after the head go straight to a `BodySink`, no copy and no stream:
 * receiving 128 MiB on loopback so cost about a third of the CPU it costs through node:http.
 */
class SocketBody {
  readonly buffer = Buffer.allocUnsafe(READ_BYTES);
  socket!: net.Socket;
  /** Whether the reads are the adopted body's (else node:http's). */
  private adopted = false;
  /** Body bytes not yet arrived, and not yet given to the sink. */
  private toArrive = 0;
  private toGive = 0;
  /** Body bytes that arrived before a sink did (copies), and how the body failed before one. */
  private early: Buffer[] = [];
  private failure: unknown;
  private sink: BodySink | undefined;
  private settled = false;

  onRead(length: number, buffer: Buffer): boolean {
    if (!this.adopted) {
      this.socket.emit("data", Buffer.from(buffer.subarray(0, length)));
      return true;
    }
    if (this.settled) return false;
    const chunk = this.arrived(buffer.subarray(0, length));
    if (this.sink === undefined) {
      this.early.push(Buffer.from(chunk));
      return false; // Paused until a sink takes the body (resumed by `attach`).
    }
    this.give(chunk);
    return !this.settled;
  }

  /** Of bytes read, those that are the body's (never past its Content-Length). */
  private arrived(bytes: Buffer): Buffer {
    const chunk = bytes.subarray(0, Math.min(bytes.length, this.toArrive));
    this.toArrive -= chunk.length;
    return chunk;
  }

  /** Takes over the reads after `res`'s head when its body is plain. */
  adopt(res: http.IncomingMessage, length: number): void {
    this.adopted = true;
    this.toArrive = length;
    this.toGive = length;
    // Bytes read with the head already went to node:http's parser: they come out of `res`.
    res.on("data", (bytes: Buffer) => {
      if (this.settled) return;
      const chunk = this.arrived(bytes);
      if (this.sink === undefined) this.early.push(chunk);
      else this.give(chunk);
    });
    // node:http sees a body that never ends: once the socket closes, `res` fails as aborted.
    res.on("error", () => {});
    this.socket.once("close", () => {
      if (this.toArrive === 0) return;
      const err = Object.assign(new Error("the connection closed before the body's end"), {
        code: "ECONNRESET",
      });
      this.stop(this.failure ?? err);
    });
    this.socket.on("error", (err) => (this.failure ??= err));
  }

  /** Hands the body to `sink`: first what arrived before it, then each read as it arrives. */
  attach(sink: BodySink): void {
    this.sink = sink;
    if (this.toGive === 0) return this.finish(); // An empty body.
    for (const chunk of this.early.splice(0)) {
      this.give(chunk);
      if (this.settled) return;
    }
    if (this.failure !== undefined) return this.stop(this.failure);
    this.socket.resume();
  }

  private give(chunk: Buffer): void {
    if (chunk.length === 0) return;
    try {
      this.sink!.bytes(chunk);
    } catch (err) {
      return this.stop(err);
    }
    this.toGive -= chunk.length;
    if (this.toGive === 0) this.finish();
  }

  private finish(): void {
    this.settled = true;
    this.socket.destroy(); // Never back to the pool: node:http still waits for this body.
    this.sink!.end();
  }

  private stop(err: unknown): void {
    if (this.settled) return;
    if (this.sink === undefined) {
      this.failure ??= err; // Told once a sink comes, after the bytes that arrived before.
      return;
    }
    this.settled = true;
    this.socket.destroy();
    this.sink.fail(err);
  }
}

const bodies = new WeakMap<net.Socket, SocketBody>();
const adoptedBodies = new WeakMap<http.IncomingMessage, SocketBody>();

/** node:http's agent (keep-alive, as its global one) with connections that are `SocketBody`s. */
class SocketBodyAgent extends http.Agent {
  override createConnection(options: net.NetConnectOpts): net.Socket {
    const body = new SocketBody();
    const socket = net.connect({
      ...options,
      onread: { buffer: body.buffer, callback: (n, buffer) => body.onRead(n, buffer as Buffer) },
    } as net.NetConnectOpts);
    body.socket = socket;
    bodies.set(socket, body);
    return socket;
  }
}

let agent: SocketBodyAgent | undefined;
/** The agent whose plain-http connections can hand a body straight to a sink. */
export function socketBodyAgent(): http.Agent {
  return (agent ??= new SocketBodyAgent({ keepAlive: true }));
}

/**
 * Called as `res`'s head arrives (before any of its body is read): when it answers a GET with
 * an identity 200 or 206 with a Content-Length, on a connection of `socketBodyAgent`, its body
 * is taken off the socket for `socketBody(res)`; any other answer stays node:http's.
 */
export function adoptBody(res: http.IncomingMessage, req: http.ClientRequest): void {
  const body = bodies.get(res.socket as net.Socket);
  const length = Number(res.headers["content-length"] ?? NaN);
  const plain =
    req.method === "GET" &&
    (res.statusCode === 200 || res.statusCode === 206) &&
    Number.isSafeInteger(length) &&
    length >= 0 &&
    res.headers["transfer-encoding"] === undefined &&
    (res.headers["content-encoding"] ?? "identity") === "identity";
  if (body === undefined || !plain) return;
  // Not back to the pool even when node:http saw the whole body with the head: `finish` ends it.
  req.shouldKeepAlive = false;
  body.adopt(res, length);
  adoptedBodies.set(res, body);
}

/** The body `adoptBody` took from `res`, to hand to a sink; undefined: read `res` as a stream. */
export function socketBody(
  res: http.IncomingMessage,
): { attach(sink: BodySink): void } | undefined {
  return adoptedBodies.get(res);
}
