/**
 * The relay as it stands when a bench starts, run by `wrangler dev` from a copy of the files it
 * is built from. `wrangler dev` reloads its Worker whenever a file under the watched `src/` is
 * written (wrangler.toml's custom build watches that directory), and answers `503` to every
 * request in flight then; a long bench run from the working checkout meets every edit, format
 * and `npm run build:shim` made there meanwhile. Run from a copy, it measures one build of the
 * relay, and nothing written to the checkout reloads it.
 */
import { cp, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startRelay, type RunningRelay } from "../test/support/relay";

const root = fileURLToPath(new URL("..", import.meta.url));
/** What `wrangler dev` builds the Worker from and configures it with. */
const BUILT_FROM = [
  "src",
  "agent-shim",
  "migrations",
  "wrangler.toml",
  "package.json",
  "tsconfig.json",
];

export async function startSnapshotRelay(vars: Record<string, string> = {}): Promise<RunningRelay> {
  const dir = await mkdtemp(join(tmpdir(), "airlock-relay-snapshot-"));
  const removeCopy = () => rm(dir, { recursive: true, force: true });
  try {
    for (const name of BUILT_FROM) await cp(join(root, name), join(dir, name), { recursive: true });
    await symlink(join(root, "node_modules"), join(dir, "node_modules"));
    const relay = await startRelay({ root: dir, vars });
    return {
      ...relay,
      async stop() {
        await relay.stop();
        await removeCopy();
      },
    };
  } catch (error) {
    await removeCopy();
    throw error;
  }
}
