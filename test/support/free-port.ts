import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The lowest port the tests pick from; below it are the well-known and registered services'. */
const LOWEST = 20_000;

/**
 * A TCP port nothing listens on at 127.0.0.1, for a server started later by another process
 * (wrangler dev, sshd, `npm start`). It is picked below the kernel's ephemeral range: a port
 * from `listen(0)` is ephemeral, and in the seconds before the server binds it any process's
 * outgoing connection could take it as its own local port, which a listener cannot then bind.
 */
export async function freePort(): Promise<number> {
  const highest = ephemeralLow() - 1;
  for (let attempt = 0; highest > LOWEST && attempt < 50; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (highest - LOWEST + 1));
    if (await portIsFree(port)) return port;
  }
  return kernelPort();
}

/** The first port of `net.ipv4.ip_local_port_range` (Linux's default 32768). */
function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0],
    );
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether nothing listens on 127.0.0.1:`port` (binding it for a moment, then letting go). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () =>
      server.close(() => resolve(true)),
    );
  });
}

/** A port the kernel picks (`listen(0)`), when none below the ephemeral range is free. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
