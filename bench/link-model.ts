/**
 * Wall time on paper, from measured round trips and bytes (bench/critical-path.ts), for links
 * this machine cannot make (its kernel has no `netem`). Per link:
 *
 *   time = RTT × (turns + 2 × new connections)  +  bytes / min(n × Mathis, link rate)
 *
 * A new connection costs TCP's handshake and TLS 1.3's (production is HTTPS; loopback is not).
 * Mathis et al.'s bound for one steady TCP stream is MSS/RTT × C/√p (MSS 1460 B, C = √(3/2));
 * `n` streams carrying the bulk at once get n times that, up to the link's rate. Slow start,
 * server time and the client's own CPU (hashing, gzip) are left out, for Airlock and curl alike.
 */
import type { CriticalPath, Link } from "./critical-path";

export interface Profile {
  name: string;
  rttMs: number;
  /** Packet loss rate (0.0001 = 0.01 %); 0: no loss, only the link rate bounds a stream. */
  loss: number;
  /** Link rate in bits per second; Infinity when the profile sets none. */
  bitsPerSecond: number;
}

export const PROFILES: Profile[] = [
  { name: "same region", rttMs: 4, loss: 0, bitsPerSecond: 2e9 },
  { name: "cross-continent", rttMs: 80, loss: 0.0001, bitsPerSecond: Infinity },
  { name: "poor link", rttMs: 150, loss: 0.005, bitsPerSecond: 100e6 },
];

const MSS = 1460;
const C = Math.sqrt(3 / 2);

/** One stream's bound in bytes per second. */
export function mathisBytesPerSecond(profile: Profile): number {
  return profile.loss === 0
    ? Infinity
    : (MSS / (profile.rttMs / 1000)) * (C / Math.sqrt(profile.loss));
}

/**
 * The profile each link is given: the sandbox's link and the relay's link to a chat platform
 * cross the distance the profile describes; the relay and its store sit in one region.
 */
export function profileFor(link: Link, profile: Profile): Profile {
  return link === "relay-store" ? PROFILES[0]! : profile;
}

/** Modelled wall time in ms of an operation measured as `path`, on `profile`. */
export function modelMs(path: CriticalPath, profile: Profile): number {
  let ms = 0;
  for (const [link, trips] of Object.entries(path.trips) as [
    Link,
    { connects: number; exchanges: number },
  ][]) {
    ms += profileFor(link, profile).rttMs * (trips.exchanges + 2 * trips.connects);
  }
  for (const [link, bytes] of Object.entries(path.bytes) as [Link, CriticalPath["bytes"][Link]][]) {
    if (!bytes) continue;
    const p = profileFor(link, profile);
    const rate = Math.min(bytes.parallel * mathisBytesPerSecond(p), p.bitsPerSecond / 8);
    ms += ((bytes.up + bytes.down) / rate) * 1000;
  }
  return ms;
}

/** `12 + 3 new` per link, the way the tables print round trips. */
export function formatTrips(path: CriticalPath): string {
  const parts = (Object.entries(path.trips) as [Link, { connects: number; exchanges: number }][])
    .filter(([, t]) => t.exchanges > 0)
    .map(([link, t]) => `${link}: ${t.exchanges} turns, ${t.connects} new conn.`);
  return parts.join("; ") || "—";
}

/** Bytes per link: total up/down, the streams that carried them, how many ran at once. */
export function formatBytes(path: CriticalPath): string {
  const mib = (n: number) =>
    n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
  return (
    (Object.entries(path.bytes) as [Link, CriticalPath["bytes"][Link]][])
      .filter(([, b]) => b)
      .map(([link, b]) => {
        const streams = b!.streams.length;
        const top = b!.streams.slice(0, 4).map(mib).join(", ");
        return `${link}: ${mib(b!.up)} up, ${mib(b!.down)} down on ${streams} stream(s) [${top}${streams > 4 ? ", …" : ""}], ${b!.parallel} at once`;
      })
      .join("; ") || "—"
  );
}
