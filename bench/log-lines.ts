/**
 * Deterministic, log-like text modelled on a web service's log: ISO timestamp, level, component
 * and a logfmt message. Requests are interleaved (several in flight) and each logs its start, a
 * few database/cache steps and its end under one request id; failures log a stack trace; workers
 * and a metrics reporter add their own lines. Numbers and ids vary as in real logs.
 */

/** mulberry32: a small, fast, seeded PRNG. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Request {
  id: string;
  head: string;
  steps: number;
  started: number;
}

const ROUTES = [
  "GET /v1/orders/",
  "GET /v1/orders/",
  "GET /v1/users/",
  "POST /v1/orders/",
  "PUT /v1/files/",
  "GET /v1/invoices/",
  "DELETE /v1/sessions/",
];
const QUERIES = ["select_order_by_id", "select_user", "insert_audit", "update_order_status"];
const QUEUES = ["email", "thumbnails", "billing", "exports"];
const FAILURES = [
  [
    "ECONNRESET",
    "at Socket.onError (node:net:1402:16)",
    "at PgPool.query (/srv/app/db/pool.js:88:11)",
  ],
  [
    "deadlock detected",
    "at Client.query (/srv/app/db/client.js:211:9)",
    "at OrderService.update (/srv/app/orders.js:57:22)",
  ],
] as const;

/** An endless stream of log lines from `seed`, starting at `startMs`. */
export class LogLines {
  private readonly random: () => number;
  private clock: number;
  private readonly inFlight: Request[] = [];

  constructor(seed = 20250101, startMs = Date.UTC(2025, 0, 1)) {
    this.random = prng(seed);
    this.clock = startMs;
  }

  /** The next line(s), newline-terminated, ASCII only (so length is the byte count). */
  next(): string {
    this.clock += Math.floor(-Math.log(1 - this.random()) * 6);
    const roll = this.random();
    if (roll < 0.03) return this.line("INFO ", "worker." + this.pick(QUEUES), this.job());
    if (roll < 0.035) return this.line("INFO ", "metrics", this.metrics());
    if (this.inFlight.length < 6 && (this.inFlight.length === 0 || roll < 0.3)) return this.start();
    const index = this.int(this.inFlight.length);
    const request = this.inFlight[index]!;
    if (request.steps-- > 0) return this.step(request);
    this.inFlight.splice(index, 1);
    return this.finish(request);
  }

  private line(level: string, component: string, message: string): string {
    return `${new Date(this.clock).toISOString()} ${level} [${component}] ${message}\n`;
  }

  private int(below: number): number {
    return Math.floor(this.random() * below);
  }

  private pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  private hex(digits: number): string {
    let out = "";
    while (out.length < digits) out += this.int(0x10000).toString(16).padStart(4, "0");
    return out.slice(0, digits);
  }

  private start(): string {
    const user = Math.floor(2000 * this.random() ** 3); // a few busy users, a long tail
    const request: Request = {
      id: this.hex(16),
      head: `${this.pick(ROUTES)}${this.int(100_000)}`,
      steps: this.int(4),
      started: this.clock,
    };
    this.inFlight.push(request);
    const ip = `10.0.${this.int(8)}.${this.int(256)}`;
    return this.line(
      "INFO ",
      "api.http",
      `--> ${request.head} req=${request.id} user=u_${user} ip=${ip}`,
    );
  }

  private step(request: Request): string {
    if (this.random() < 0.4) {
      const hit = this.random() < 0.85 ? "hit" : "miss";
      return this.line(
        "DEBUG",
        "cache",
        `req=${request.id} ${hit} key=${request.head.split(" ")[1]}`,
      );
    }
    const message = `req=${request.id} query=${this.pick(QUERIES)} rows=${this.int(3)} dur_ms=${1 + this.int(20)}`;
    return this.line("DEBUG", "db.pool", message);
  }

  private finish(request: Request): string {
    const roll = this.random();
    const status = roll < 0.9 ? 200 : roll < 0.98 ? 404 : 500;
    const level = status === 200 ? "INFO " : status === 404 ? "WARN " : "ERROR";
    const took = this.clock - request.started + this.int(5);
    const bytes = status === 200 ? 200 + this.int(20_000) : 87;
    const message = `<-- ${request.head} req=${request.id} status=${status} dur_ms=${took} bytes=${bytes}`;
    let out = this.line(level, "api.http", message);
    if (status === 500) {
      const [error, ...frames] = this.pick(FAILURES);
      out += `Error: ${error}\n${frames.map((frame) => `    ${frame}\n`).join("")}`;
    }
    return out;
  }

  private job(): string {
    const outcome = this.random() < 0.95 ? "done" : "retrying";
    return `job=${this.hex(12)} ${outcome} attempt=${1 + this.int(3)} dur_ms=${this.int(5000)}`;
  }

  private metrics(): string {
    const heap = 300 + this.int(200);
    return `heap_mb=${heap} rss_mb=${heap + 250 + this.int(50)} loop_lag_ms=${this.int(8)} in_flight=${this.inFlight.length}`;
  }
}
