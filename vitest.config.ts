import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { fileURLToPath } from "node:url";
import { defineConfig, defineProject } from "vitest/config";

const migrationsDir = fileURLToPath(new URL("./migrations", import.meta.url));

/** Bindings only the tests see; the real ones come from wrangler.toml. */
const testBindings = {
  AIRLOCK_ADMIN_TOKEN: "test-admin-token",
  AIRLOCK_SIGNING_KEY: "test-signing-key-0123456789abcdef",
};

export default defineConfig({
  test: {
    // A passing test prints nothing; a failing one shows what it and the Worker logged.
    silent: "passed-only",
    projects: [
      // Units and routes inside the real Workers runtime, on the local R2 and D1.
      defineProject({
        plugins: [
          cloudflareTest(async () => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                ...testBindings,
                TEST_MIGRATIONS: await readD1Migrations(migrationsDir),
              },
            },
          })),
        ],
        test: {
          name: "workers",
          // One runtime for all files: the Worker's modules load once, not once per file (that
          // was most of the project's time). Each file still starts from an empty D1 and bucket
          // (test/apply-migrations.ts).
          isolate: false,
          sequence: { groupOrder: 0 },
          // Beside the node project (npm test runs both at once) a test's few seconds of CPU
          // in workerd can take several times as long: 5 s (Vitest's default) cut one off.
          testTimeout: 30_000,
          include: ["test/{routes,storage,auth,db,http,services,platforms}/**/*.test.ts"],
          setupFiles: ["./test/apply-migrations.ts"],
          globalSetup: [
            "./test/fixtures/s3/global-setup.ts",
            "./test/fixtures/platforms/global-setup.ts",
          ],
        },
      }),
      // End-to-end: the built shim as a subprocess against `wrangler dev` and a strict S3 server.
      defineProject({
        test: {
          name: "node",
          environment: "node",
          include: ["test/{e2e,shim,fixtures,security,sdk,mcp}/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Four files at a time: most of a file's time is spent waiting on relays, shims,
          // queues and leases, not on this machine's two cores (with three, an idle run kept
          // the cores 2/3 busy). `npm test` runs this project beside the workers project
          // (scripts/run-tests.mjs), which ends within its first three minutes; a plain
          // `vitest run` runs it after.
          maxWorkers: 4,
          sequence: { groupOrder: 1 },
          globalSetup: ["./test/support/shared-relay.setup.ts"],
          setupFiles: [
            "./test/support/client-connection.setup.ts",
            "./test/support/dev-server-retry.setup.ts",
          ],
        },
      }),
    ],
  },
});
