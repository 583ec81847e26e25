import { startStrictS3, type StrictS3 } from "../test/fixtures/s3/strict-s3";
import { startRelay, type RunningRelay } from "../test/support/relay";
import { s3Vars } from "../test/support/s3-vars";
import type { Session } from "./relay-api";
import { StoreTap } from "./store-tap";

export type Backend = "s3" | "r2";

/** Files up to this size are accepted by the bench's relay. */
const MAX_FILE_BYTES = 4 * 1024 ** 3;

/**
 * The relay a large-send bench talks to, started afresh (with a fresh store on s3) for every
 * measurement: a multipart upload is read back on the relay's queue after `complete` answers,
 * and that read-back, or the gigabytes an earlier run left stored, must not weigh on the next.
 */
export class LargeRelay {
  private relay: RunningRelay | undefined;
  private s3: StrictS3 | undefined;
  /** On s3: in front of the store, to see when the first part PUT's first byte arrives. */
  tap: StoreTap | undefined;

  constructor(readonly backend: Backend) {}

  /** The process group of the running relay (`wrangler dev` and its workerd); 0 when none. */
  get processGroup(): number {
    return this.relay?.processGroup ?? 0;
  }

  /** Stops whatever ran before and starts a relay (and store) with nothing in it. */
  async fresh(): Promise<Session> {
    await this.stop();
    const vars: Record<string, string> = { MAX_FILE_BYTES: String(MAX_FILE_BYTES) };
    if (this.backend === "s3") {
      this.s3 = await startStrictS3();
      this.tap = await StoreTap.start(this.s3.endpoint);
      Object.assign(vars, s3Vars(this.s3, this.tap.endpoint));
    }
    this.relay = await startRelay({ storage: this.backend, vars });
    const { token } = await this.relay.mintSession({ ttlSeconds: 86_400, quotaBytes: 1024 ** 4 });
    await warmUp(this.relay.url, token);
    return { url: this.relay.url, token };
  }

  async stop(): Promise<void> {
    const { relay, s3, tap } = this;
    this.relay = undefined;
    this.s3 = undefined;
    this.tap = undefined;
    await relay?.stop();
    await tap?.stop();
    await s3?.stop();
  }
}

/**
 * A fresh `wrangler dev` is slow on its first requests (the Worker compiles, D1 opens): one
 * authenticated request first, so that the measurement meets a warm relay.
 */
async function warmUp(url: string, token: string): Promise<void> {
  const response = await fetch(`${url}/v1/files`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (!response.ok) throw new Error(`warm-up GET /v1/files: ${response.status}`);
  await response.arrayBuffer();
}
