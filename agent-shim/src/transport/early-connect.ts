import * as http from "node:http";
import type * as Https from "node:https";
import type * as net from "node:net";
import type { Duplex } from "node:stream";
import { urlToHttpOptions } from "node:url";

/**
 * Connections opened before the request that will use them, so that their set-up (TCP, and TLS
 * for https) overlaps work the shim does anyway: a large send connects to the relay while it
 * reads and hashes the first part that goes with its declare. Requests to an origin connected
 * early go through this module's agent for its protocol, whose first new connection to that
 * origin is the early one; the rest is node:http's agent as the global one is (same options,
 * keep-alive where Node keeps it), so that later requests reuse the connection as before.
 */
interface EarlyAgent extends http.Agent {
  /** Opens a connection to `host:port` now, for the next new connection asked for there. */
  connectEarly(host: string, port: number): void;
}

type AgentClass = new (options: http.AgentOptions) => http.Agent;

/** `base` (node:http's or node:https's agent) handing out connections opened early first. */
function earlyAgentClass(base: AgentClass): new (options: http.AgentOptions) => EarlyAgent {
  return class extends base implements EarlyAgent {
    private readonly waiting = new Map<string, net.Socket>();

    constructor(private readonly agentOptions: http.AgentOptions) {
      super(agentOptions);
    }

    connectEarly(host: string, port: number): void {
      const key = `${host}:${port}`;
      if (this.waiting.get(key)?.destroyed === false) return;
      // A kept-alive connection is there already (a long-lived shim: airlock mcp).
      if (Object.values(this.freeSockets).some((free) => free?.length)) return;
      // What node:http's agent passes for a new connection (keep-alive included); the server
      // name for TLS as it would set it (none for an IP address).
      const { keepAlive, keepAliveMsecs } = this.agentOptions;
      const options: http.ClientRequestArgs & { servername?: string } = {
        ...this.agentOptions,
        host,
        port,
        ...(keepAlive ? { keepAlive, keepAliveInitialDelay: keepAliveMsecs ?? 1000 } : {}),
        ...(/^[\d.]+$|:/.test(host) ? {} : { servername: host }),
      };
      const socket = super.createConnection(options) as net.Socket;
      // Until a request takes it, it neither keeps the process alive nor fails it.
      socket.unref();
      socket.on("error", () => socket.destroy());
      this.waiting.set(key, socket);
    }

    override createConnection(
      options: http.ClientRequestArgs,
      callback?: (err: Error | null, stream: Duplex) => void,
    ): Duplex | null | undefined {
      const key = `${options.host}:${options.port}`;
      const socket = this.waiting.get(key);
      this.waiting.delete(key);
      if (socket && !socket.destroyed) {
        socket.ref();
        return socket;
      }
      return super.createConnection(options, callback);
    }
  };
}

let httpAgent: EarlyAgent | undefined;
let httpsAgent: EarlyAgent | undefined;
/** Origins (`protocol//host:port`) connected early: their requests go through `agentFor`. */
const early = new Set<string>();

/** The options node:http's or node:https's global agent was made with (keep-alive and all). */
function globalOptions(agent: http.Agent): http.AgentOptions {
  return { ...(agent as http.Agent & { options?: http.AgentOptions }).options };
}

function agentFor(protocol: string): EarlyAgent {
  if (protocol !== "https:") {
    return (httpAgent ??= new (earlyAgentClass(http.Agent))(globalOptions(http.globalAgent)));
  }
  const { Agent, globalAgent } = https();
  return (httpsAgent ??= new (earlyAgentClass(Agent))(globalOptions(globalAgent)));
}

/**
 * node:https, loaded when a URL first needs it: TLS is the costliest of the built-in modules to
 * load, and a relay on plain http (a sandbox beside it) never needs it. The bundle is CommonJS.
 */
export function https(): typeof Https {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, by design
  return require("node:https") as typeof Https;
}

/**
 * Starts connecting to the origin of `url` now; the next request there takes the connection.
 * Failures are not reported here: that request connects again and reports its own.
 */
export function connectEarly(url: string): void {
  try {
    const target = new URL(url);
    const { hostname, port, protocol } = urlToHttpOptions(target);
    const host = hostname ?? "localhost";
    const number = Number(port ?? (protocol === "https:" ? 443 : 80));
    agentFor(target.protocol).connectEarly(host, number);
    early.add(target.origin);
  } catch {
    // Only ever a head start.
  }
}

/** The agent for a request to `url`: this module's when its origin was connected early. */
export function earlyAgent(url: URL): http.Agent | undefined {
  return early.has(url.origin) ? agentFor(url.protocol) : undefined;
}
