/**
 * The round trips on an operation's critical path, derived from what the recording proxies saw
 * (bench/tcp-recorder.ts). Each exchange is an interval from its request's first byte (the
 * connection's accept, for the first exchange on a connection: TCP's handshake came first) to
 * its answer's first byte; exchanges whose intervals overlap ran in parallel. The critical path
 * is the longest chain of exchanges each starting after the one before it had its answer.
 *
 * Exchanges on other links (the relay's own requests to the store or to a chat platform) that
 * start while a client exchange waits for its answer are nested in it: their own longest chain
 * adds to that exchange's weight, on their link.
 */
import type { Exchange } from "./tcp-recorder";

/** Which network an exchange crosses: sandbox ↔ relay/store, relay ↔ store, relay ↔ platform. */
export type Link = "client" | "relay-store" | "platform";

/** Round trips on one link: TCP handshakes of new connections, and request/answer turns. */
export interface LinkTrips {
  connects: number;
  exchanges: number;
}

export type Trips = Partial<Record<Link, LinkTrips>>;

/** What one link carried during the operation. */
export interface LinkBytes {
  /** Connections that carried anything, with the bytes each carried (up + down). */
  streams: number[];
  up: number;
  down: number;
  /** Most exchanges of ≥ 1 MiB running at once (1 when none was that large). */
  parallel: number;
}

export interface CriticalPath {
  trips: Trips;
  /** The chain, one line per exchange (nested ones indented), each with its start time. */
  chain: string[];
  bytes: Partial<Record<Link, LinkBytes>>;
}

const BULK = 1024 * 1024;

interface Node {
  exchange: Exchange;
  link: Link;
  children: Node[];
}

const answered = (e: Exchange) => (Number.isNaN(e.firstResponseByte) ? e.end : e.firstResponseByte);

/** The critical path of the exchanges seen; `linkOf` says which link each crosses. */
export function criticalPath(
  exchanges: Exchange[],
  linkOf: (exchange: Exchange) => Link,
  outer: Link = "client",
  origin = 0,
): CriticalPath {
  const nodes: Node[] = exchanges.map((exchange) => ({
    exchange,
    link: linkOf(exchange),
    children: [],
  }));
  const top: Node[] = [];
  const outerNodes = nodes.filter((n) => n.link === outer);
  for (const node of nodes) {
    if (node.link === outer) {
      top.push(node);
      continue;
    }
    const t = node.exchange.start;
    const parent = outerNodes.find(
      (p) => p.exchange.requestStart <= t && t <= answered(p.exchange),
    );
    if (parent) parent.children.push(node);
    else top.push(node);
  }
  const { trips, chain } = longestChain(top, 0, origin);
  return { trips, chain, bytes: bytesByLink(nodes) };
}

interface Weighed {
  trips: Trips;
  total: number;
  chain: string[];
}

function own(node: Node, depth: number, origin: number): Weighed {
  const e = node.exchange;
  const connects = e.index === 0 ? 1 : 0;
  const trips: Trips = { [node.link]: { connects, exchanges: 1 } };
  const inner = longestChain(node.children, depth + 1, origin);
  const sizes = `${e.bytesUp} B up, ${e.bytesDown} B down`;
  const at = `+${Math.round(e.start - origin)} ms`;
  const line = `${"  ".repeat(depth)}${at} ${e.proxy}#${e.connection}${connects ? " (new)" : ""} ${e.line}: ${sizes}`;
  return {
    trips: addTrips(trips, inner.trips),
    total: 1 + connects + inner.total,
    chain: [line, ...inner.chain],
  };
}

function longestChain(nodes: Node[], depth = 0, origin = 0): Weighed {
  const sorted = [...nodes].sort((a, b) => answered(a.exchange) - answered(b.exchange));
  const best: Weighed[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const mine = own(sorted[i]!, depth, origin);
    let before: Weighed | undefined;
    for (let j = 0; j < i; j++) {
      const candidate = best[j]!;
      if (answered(sorted[j]!.exchange) <= sorted[i]!.exchange.start)
        if (!before || candidate.total > before.total) before = candidate;
    }
    best.push(
      before
        ? {
            trips: addTrips(before.trips, mine.trips),
            total: before.total + mine.total,
            chain: [...before.chain, ...mine.chain],
          }
        : mine,
    );
  }
  return best.reduce<Weighed>((a, b) => (b.total > a.total ? b : a), {
    trips: {},
    total: 0,
    chain: [],
  });
}

function addTrips(a: Trips, b: Trips): Trips {
  const sum: Trips = { ...a };
  for (const [link, t] of Object.entries(b) as [Link, LinkTrips][]) {
    const was = sum[link] ?? { connects: 0, exchanges: 0 };
    sum[link] = { connects: was.connects + t.connects, exchanges: was.exchanges + t.exchanges };
  }
  return sum;
}

function bytesByLink(nodes: Node[]): Partial<Record<Link, LinkBytes>> {
  const result: Partial<Record<Link, LinkBytes>> = {};
  for (const link of new Set(nodes.map((n) => n.link))) {
    const mine = nodes.filter((n) => n.link === link).map((n) => n.exchange);
    const streams = new Map<string, number>();
    for (const e of mine) {
      const key = `${e.proxy}#${e.connection}`;
      streams.set(key, (streams.get(key) ?? 0) + e.bytesUp + e.bytesDown);
    }
    const bulk = mine.filter((e) => e.bytesUp + e.bytesDown >= BULK);
    const parallel = Math.max(
      1,
      ...bulk.map(
        (e) =>
          bulk.filter((o) => o.requestStart <= e.requestStart && e.requestStart < o.end).length,
      ),
    );
    result[link] = {
      streams: [...streams.values()].sort((a, b) => b - a),
      up: mine.reduce((sum, e) => sum + e.bytesUp, 0),
      down: mine.reduce((sum, e) => sum + e.bytesDown, 0),
      parallel,
    };
  }
  return result;
}
