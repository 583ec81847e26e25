import { Agent, setGlobalDispatcher } from "undici";

/**
 * The node project's own `fetch` (the TypeScript SDK in-process, the tests' API calls) opens a
 * connection per request instead of keeping one alive. `wrangler dev` closes an idle connection
 * after five seconds, and a request sent on one it was closing came back "other side closed"
 * (cloudflare/workers-sdk#14641: only GET and HEAD are retried there). Dropping idle connections
 * after a second was not enough: on a busy machine (load ~15) one still came back so, its
 * connection reused. A loopback connect costs well under a millisecond.
 * undici 6, the major Node 20's own fetch is built on, so that fetch takes this dispatcher.
 */
setGlobalDispatcher(new Agent({ pipelining: 0 }));
