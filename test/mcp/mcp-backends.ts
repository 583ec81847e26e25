import { startFaultProxy, type FaultProxy, type ProxiedRequest } from "../fixtures/fault-proxy";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";

/**
 * A relay under `wrangler dev` with a fault proxy where the shim's stored bytes go: in front of
 * the relay on r2 (its blob-upload routes take the bytes; the shim talks to the relay through the
 * proxy), in front of the strict S3 server on s3 (presigned PUTs go straight to the store).
 */
export interface McpBackend {
  name: "r2" | "s3";
  relay: RunningRelay;
  proxy: FaultProxy;
  /** The AIRLOCK_URL the shim is given. */
  shimUrl: string;
  /** Whether a proxied request PUTs a file's stored bytes. */
  isStoragePut(request: Pick<ProxiedRequest, "method" | "path" | "presigned">): boolean;
  stop(): Promise<void>;
}

export async function startBackend(name: "r2" | "s3"): Promise<McpBackend> {
  if (name === "r2") {
    const relay = await startRelay();
    // Keeping the proxy's Host makes the relay sign its upload URLs for the proxy.
    const proxy = await startFaultProxy({ target: relay.url, host: "preserve" });
    return {
      name,
      relay,
      proxy,
      shimUrl: proxy.url,
      isStoragePut: (r) => r.method === "PUT" && r.path.startsWith("/v1/blob-uploads/"),
      stop: async () => {
        await proxy.stop();
        await relay.stop();
      },
    };
  }
  const s3: StrictS3 = await startStrictS3();
  // The relay signs for S3_ENDPOINT's host: the proxy keeps it, so the strict S3 accepts.
  const proxy = await startFaultProxy({ target: s3.endpoint, host: "preserve" });
  const relay = await startRelay({ storage: "s3", vars: s3Vars(s3, proxy.url) });
  return {
    name,
    relay,
    proxy,
    shimUrl: relay.url,
    isStoragePut: (r) => r.method === "PUT" && r.presigned,
    stop: async () => {
      await relay.stop();
      await proxy.stop();
      await s3.stop();
    },
  };
}
