import { Agent, setGlobalDispatcher } from "undici";

/**
 * The node project's own `fetch` (the TypeScript SDK in-process, the tests' API calls) drops
 * an idle connection after a second instead of undici's four. `wrangler dev` closes one after
 * five, and under load a request sent on a connection it was closing came back "other side
 * closed" (cloudflare/workers-sdk#14641: only GET and HEAD are retried there). A connection
 * reused only within a second of its last answer never meets that close. undici 6, the major
 * Node 20's own fetch is built on, so that fetch takes this dispatcher.
 */
setGlobalDispatcher(new Agent({ keepAliveTimeout: 1_000, keepAliveMaxTimeout: 1_000 }));
