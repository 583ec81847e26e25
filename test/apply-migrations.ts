import { applyD1Migrations, env } from "cloudflare:test";

// The Workers project runs its files one after another in one runtime (isolate: false in
// vitest.config.ts): loading the Worker's modules once instead of per file saves most of the
// project's time. Each file still starts from an empty relay: the same migrations/ as
// production (applied once; applyD1Migrations skips what is applied), then every table
// emptied and the bucket cleared of what an earlier file stored.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

const tables = await env.DB.prepare(
  "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'",
).all<{ name: string }>();
await env.DB.batch([
  env.DB.prepare("PRAGMA defer_foreign_keys = true"),
  ...tables.results.map(({ name }) => env.DB.prepare(`DELETE FROM "${name}"`)),
]);

for (let cursor: string | undefined; ;) {
  const page = await env.BUCKET.list({ cursor, limit: 1000 });
  if (page.objects.length > 0) await env.BUCKET.delete(page.objects.map((o) => o.key));
  if (!page.truncated) break;
  cursor = page.cursor;
}
