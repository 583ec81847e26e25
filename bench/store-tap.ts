import net, { type AddressInfo } from "node:net";

/**
 * A TCP relay on loopback in front of the store that notes when the first byte of the first
 * part PUT (`PUT …?partNumber=…`) reaches it: what "the first part's first byte leaves" is
 * measured by. Bytes pass through untouched (the Host the relay signed for is the tap's own).
 */
export class StoreTap {
  /** `performance.now()` when the first part PUT's first byte arrived; undefined before. */
  firstPartAt: number | undefined;
  /** `http://127.0.0.1:<port>` of the tap: the store's endpoint as the relay should know it. */
  endpoint = "";
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => this.pipe(client));
  }

  /** Starts a tap in front of `endpoint` (`http://127.0.0.1:<port>`). */
  static async start(endpoint: string): Promise<StoreTap> {
    const { hostname, port } = new URL(endpoint);
    const tap = new StoreTap({ host: hostname, port: Number(port) });
    await new Promise<void>((resolve) => tap.server.listen(0, "127.0.0.1", resolve));
    const { port: own } = tap.server.address() as AddressInfo;
    tap.endpoint = `http://127.0.0.1:${own}`;
    return tap;
  }

  /** Forgets the last first part (a new measurement starts). */
  reset(): void {
    this.firstPartAt = undefined;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: net.Socket): void {
    const upstream = net.connect(this.target);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
      socket.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on("data", (chunk: Buffer) => {
      const at = performance.now();
      if (this.firstPartAt === undefined) {
        const head = chunk.toString("latin1", 0, Math.min(chunk.length, 2048));
        if (/^PUT [^ ]*[?&]partNumber=/.test(head)) this.firstPartAt = at;
      }
    });
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
