import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { RUNTIMES } from "../shim/run-shim";
import { dir, relay, useSdkSuite, MiB, root, sha256 } from "./sdk-support";

describe("the operator SDK against the relay under wrangler dev", () => {
  useSdkSuite();

  describe("the built package (sdk/dist, `airlock-relay-sdk/node`) on every supported Node", () => {
    beforeAll(() => {
      execFileSync(process.execPath, [join(root, "scripts/build-sdk.mjs")], { stdio: "pipe" });
    });

    it.each(RUNTIMES)("seeds from a path and downloads to a file under $name", async ({ node }) => {
      if (!existsSync(node)) throw new Error(`missing runtime ${node}`);
      const work = await mkdtemp(join(dir, "runtime-"));
      const input = randomBytes(2 * MiB + 5);
      await writeFile(join(work, "in.bin"), input);
      const script = `
        import { AirlockClient, AirlockError } from "airlock-relay-sdk/node";
        import * as core from "airlock-relay-sdk";
        const [url, adminToken, work] = process.argv.slice(1);
        if (core.AirlockError !== AirlockError) throw new Error("two AirlockError classes");
        const airlock = new AirlockClient({ url, adminToken });
        const { sessionId, token } = await airlock.createSession();
        const item = await airlock.seedInbox(sessionId, work + "/in.bin");
        const record = await airlock.asSession(token).downloadToFile(item.file.fileId, work + "/out.bin");
        const refused = await airlock.asSession(token).deliver(item.file.fileId, { to: "slack:C1" }).catch((e) => e);
        const outputs = await airlock.listFiles({ sessionId, origin: "sandbox" });
        const inputs = await airlock.listFiles({ sessionId, origin: "seed" });
        console.log(JSON.stringify({
          sha256: record.sha256,
          code: refused instanceof AirlockError && refused.code,
          outputs: outputs.length,
          inputs: inputs.map((file) => file.fileId === item.file.fileId),
        }));
      `;
      const stdout = execFileSync(
        node,
        ["--input-type=module", "-e", script, relay.url, relay.adminToken, work],
        // The package's own directory: its name resolves to itself there, as once installed.
        { cwd: join(root, "sdk"), encoding: "utf8" },
      );
      expect(JSON.parse(stdout)).toEqual({
        sha256: sha256(input),
        code: "destination_not_allowed",
        outputs: 0,
        inputs: [true],
      });
      expect(sha256(await readFile(join(work, "out.bin")))).toBe(sha256(input));
      expect((await readdir(work)).sort()).toEqual(["in.bin", "out.bin"]);
    });
  });
});
