import { mkdtemp, rm } from "node:fs/promises";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectEarly, earlyAgent } from "../../agent-shim/src/transport/early-connect";
import { readText, request } from "../../agent-shim/src/transport/http";
import { selfSignedCertificate } from "../support/self-signed-certificate";

/**
 * A connection opened early (`connectEarly`, as a large send does while it hashes part 1) is
 * the one the next request to that origin runs on, over http and over https (TLS set up
 * before the request): the server sees it open before any request, and no other. Origins not
 * connected early keep node's global agent.
 */

/** A server counting its connections; each answers `POST` with the bytes it got. */
async function counting(server: http.Server, event: string) {
  const sockets: Socket[] = [];
  server.on(event, (socket: Socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { sockets, port: (server.address() as AddressInfo).port };
}

function echo(req: http.IncomingMessage, res: http.ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => res.end(`${req.socket.remotePort}:${Buffer.concat(chunks).toString()}`));
}

/** Waits until `sockets` holds one: the early connection is open before any request. */
async function opened(sockets: Socket[]): Promise<Socket> {
  for (let i = 0; i < 200 && sockets.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  expect(sockets).toHaveLength(1);
  return sockets[0]!;
}

async function post(url: string): Promise<string> {
  const body = Buffer.from("declare");
  const headers = { "content-length": String(body.length) };
  return readText(await request({ method: "POST", url, headers, body }));
}

describe("connections opened early", () => {
  let dir: string;
  const servers: http.Server[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "airlock-early-connect-"));
  });

  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await rm(dir, { recursive: true, force: true });
  });

  it("over http: the next request runs on it, and no other connection opens", async () => {
    const server = http.createServer(echo);
    servers.push(server);
    const { sockets, port } = await counting(server, "connection");
    const url = `http://127.0.0.1:${port}/v1/uploads`;
    connectEarly(url);
    const early = await opened(sockets);
    expect(await post(url)).toBe(`${early.remotePort}:declare`);
    expect(await post(url)).toBe(`${early.remotePort}:declare`); // kept alive, as before
    expect(sockets).toHaveLength(1);
    expect(earlyAgent(new URL(`http://127.0.0.1:${port + 1}/`))).toBeUndefined();
  });

  it("over https: TLS is set up before the request, on the connection it then uses", async () => {
    const { key, cert } = selfSignedCertificate(dir);
    const server = https.createServer({ key, cert }, echo);
    servers.push(server);
    const { sockets, port } = await counting(server, "secureConnection");
    // Trusted as NODE_EXTRA_CA_CERTS would make it: through the global agent's options, which
    // the early agent takes over.
    https.globalAgent.options.ca = cert;
    const url = `https://127.0.0.1:${port}/v1/uploads`;
    connectEarly(url);
    const early = await opened(sockets);
    expect(await post(url)).toBe(`${early.remotePort}:declare`);
    expect(sockets).toHaveLength(1);
  });
});
