import { applyD1Migrations, env } from "cloudflare:test";

// The same migrations/ as production, applied to the local D1 before the tests run.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
