// One MCP contract, both shims: `airlock mcp` of the Node bundle and of the Python shim, each
// started and driven by the official MCP TypeScript SDK's Client over stdio, as an agent host
// would, against the relay under `wrangler dev` on r2 and on a strict S3 server.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ErrorCode, McpError, type Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { humanSize } from "../../src/services/human-size";
import { toolsFor } from "../../src/mcp/tool-definitions";
import { apiCall } from "../support/api-call";
import { randomBytes } from "../support/bytes";
import { failureLine, prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { required, runDriver, shimDrivers, type ShimDriver } from "../shim/shims";
import { startBackend, type McpBackend } from "./mcp-backends";
import { connectShim, textOf, type McpSession } from "./mcp-client";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const MiB = 1024 * 1024;
/** How long the store holds a PUT in the cancel case. */
const STALL_MS = 5000;
/** The `send --json` fields a file's send answers, in order, as send_file's output schema lists them. */
const SEND_JSON_FIELDS = toolsFor("stdio").find((tool) => tool.name === "send_file")!.outputSchema
  .required!;

interface Sent {
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  url: string;
}

describe.each(["r2", "s3"] as const)("airlock mcp against the relay on %s", (backendName) => {
  let backend: McpBackend;
  let scratch: string;
  let drivers: ShimDriver[];
  let printedTools: unknown;

  beforeAll(async () => {
    prepareShim();
    backend = await startBackend(backendName);
    scratch = await mkdtemp(join(tmpdir(), "airlock-mcp-"));
    drivers = await shimDrivers(scratch);
    printedTools = JSON.parse((await runShim(["tool-schema", "--format", "mcp"])).stdout);
  }, 180_000);
  afterAll(async () => {
    await backend?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  describe.each(["node", "python"] as const)("the %s shim", (shimName) => {
    let driver: ShimDriver;
    let token: string;
    let work: string;
    let home: string;
    let mcp: McpSession;
    const sessions: McpSession[] = [];

    /** `airlock mcp` for a session, as a host starts it; closed after the suite. */
    const serve = async (sessionToken: string, extra: Record<string, string> = {}) => {
      const env = { ...relayEnv(backend.shimUrl, sessionToken), ...extra };
      const session = await connectShim(driver, { env, cwd: work, home });
      sessions.push(session);
      await session.client.listTools(); // as hosts do; the client then checks structured output
      return session;
    };
    /** The one line the same shim's CLI prints for the same failure. */
    const cliLine = async (args: string[], sessionToken = token) => {
      const env = relayEnv(backend.shimUrl, sessionToken);
      const result = await runDriver(driver, args, { env, cwd: work, home });
      expect(result.code).not.toBe(0);
      return failureLine(result);
    };
    const call = (name: string, args: Record<string, unknown> = {}, session = mcp) =>
      session.client.callTool({ name, arguments: args });

    beforeAll(async () => {
      driver = drivers.find((d) => d.name === shimName)!;
      token = (await backend.relay.mintSession()).token;
      work = await mkdtemp(join(scratch, `${shimName}-work-`));
      home = await mkdtemp(join(scratch, `${shimName}-home-`));
      mcp = await serve(token, { AIRLOCK_READONLY: "1" });
    });
    afterAll(async () => {
      for (const session of sessions) {
        // Nothing but JSON-RPC reached stdout, through every call of the suite.
        expect(session.transportErrors).toEqual([]);
        await session.close();
      }
    });

    it("lists exactly the tools tool-schema --format mcp prints", async () => {
      const listed = await mcp.client.listTools();
      expect({ tools: listed.tools }).toEqual(printedTools);
      expect(mcp.client.getServerVersion()?.name).toBe("airlock");
      expect(mcp.client.getInstructions()).toContain("send_file");
    });

    it("sends a 5 MB file: JSON text, structured content and a resource_link that fetches byte-exact", async () => {
      const bytes = randomBytes(5_000_000);
      await writeFile(join(work, "five.bin"), bytes);
      const progress: Progress[] = [];
      const result = await mcp.client.callTool(
        { name: "send_file", arguments: { path: "five.bin" } },
        undefined,
        { onprogress: (p) => progress.push(p), timeout: 120_000 },
      );
      expect(result.isError ?? false).toBe(false);
      const sent = result.structuredContent as unknown as Sent;
      expect(Object.keys(sent)).toEqual(SEND_JSON_FIELDS);
      expect(sent).toMatchObject({ name: "five.bin", size: bytes.length, sha256: sha256(bytes) });
      const [text, link] = result.content as [{ text: string }, Record<string, unknown>];
      expect(JSON.parse(text.text)).toEqual(sent);
      expect(link).toEqual({
        type: "resource_link",
        uri: sent.url,
        name: "five.bin",
        mimeType: "application/octet-stream",
        size: bytes.length,
      });
      const served = await fetch(sent.url);
      expect(served.status).toBe(200);
      expect(sha256(new Uint8Array(await served.arrayBuffer()))).toBe(sha256(bytes));
      // Progress rose to the whole of the stored bytes.
      expect(progress.length).toBeGreaterThan(0);
      const rising = progress.every((p, i) => i === 0 || p.progress > progress[i - 1]!.progress);
      expect(rising).toBe(true);
      expect(progress.at(-1)).toMatchObject({ progress: bytes.length, total: bytes.length });
    });

    it("sends a directory as one archive", async () => {
      await mkdir(join(work, "notes"), { recursive: true });
      await writeFile(join(work, "notes/a.txt"), "first\n");
      await writeFile(join(work, "notes/b.txt"), "second\n");
      const result = await call("send_file", { path: "notes" });
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({
        name: "notes.tar.gz",
        archive: true,
        files: 2,
      });
      expect(result.content).toContainEqual(
        expect.objectContaining({ type: "resource_link", mimeType: "application/gzip" }),
      );
    });

    it("mints a link, lists and removes a file with share_link, list_files and remove_file", async () => {
      const sent = (await call("send_file", { path: "five.bin" })).structuredContent as Sent;
      const link = await call("share_link", { file_id: sent.fileId, max_downloads: 1 });
      expect(link.structuredContent).toMatchObject({ fileId: sent.fileId, maxDownloads: 1 });
      const listed = await call("list_files");
      const files = (listed.structuredContent as { files: Sent[] }).files;
      expect(files.map((f) => f.fileId)).toContain(sent.fileId);

      const removed = await call("remove_file", { file_id: sent.fileId });
      expect(textOf(removed)).toBe(`deleted ${sent.fileId}`);
      const after = (await call("list_files")).structuredContent as { files: Sent[] };
      expect(after.files.map((f) => f.fileId)).not.toContain(sent.fileId);
      expect((await fetch(sent.url)).status).toBe(410);
    });

    it("takes a file through request_file, curl -T and receive_files, under a cleaned name", async () => {
      const empty = await call("receive_files");
      expect(textOf(empty)).toBe("nothing new in the inbox");
      expect(empty.structuredContent).toEqual({ files: [] });

      const asked = await call("request_file", { name: "notes.txt", expires: "10m" });
      const { url } = asked.structuredContent as { url: string };
      const bytes = randomBytes(300_000);
      const upload = join(scratch, `${shimName}-upload.bin`);
      await writeFile(upload, bytes);
      const named = `${url}?name=${encodeURIComponent("re\u202eport [draft].txt")}`;
      await promisify(execFile)(required("curl"), ["-fsS", "-o", "/dev/null", "-T", upload, named]);

      const received = await call("receive_files", { wait_seconds: 30 });
      expect(received.isError ?? false).toBe(false);
      const path = join(work, "uploads", "report (draft).txt");
      expect(textOf(received)).toBe(
        `[User uploaded: report (draft).txt (${humanSize(bytes.length)}) at ${path}]`,
      );
      const [file] = (received.structuredContent as { files: Record<string, unknown>[] }).files;
      expect(file).toMatchObject({ path, size: bytes.length, sha256: sha256(bytes) });
      expect(sha256(await readFile(path))).toBe(sha256(bytes));
      // AIRLOCK_READONLY=1: as pull --readonly leaves it.
      expect((await stat(path)).mode & 0o777).toBe(0o444);
    });

    it("reports progress on a long send, and a cancel mid-way leaves no file", async () => {
      const bytes = randomBytes(32 * MiB);
      await writeFile(join(work, "long.bin"), bytes);
      // The store takes the first MiB, then holds the rest for a few seconds: the call is
      // cancelled mid-way, well before the store would read on.
      const match = backend.name === "r2" ? { path: "/v1/blob-uploads/" } : { presigned: true };
      backend.proxy.inject({
        method: "PUT",
        ...match,
        fault: { kind: "stall", ms: STALL_MS, afterBytes: MiB },
        times: 1,
      });
      const cancel = new AbortController();
      const progress: Progress[] = [];
      const sending = mcp.client.callTool(
        { name: "send_file", arguments: { path: "long.bin" } },
        undefined,
        {
          signal: cancel.signal,
          timeout: 120_000,
          onprogress: (p) => {
            progress.push(p);
            if (p.progress >= MiB) cancel.abort("enough");
          },
        },
      );
      await expect(sending).rejects.toThrow();
      expect(progress[0]).toMatchObject({ total: bytes.length });
      expect(progress.at(-1)!.progress).toBeLessThan(bytes.length);
      // Once the store reads on, it finds the shim gave up the PUT (it never finished it, so
      // the file cannot have been registered after the checks below).
      const stalled = await vi.waitFor(() => {
        const put = backend.proxy.requests.find((r) => r.fault === "stall");
        expect(put).toBeDefined();
        return put!;
      });
      const settled = () => expect(stalled.clientGone || stalled.status !== 0).toBe(true);
      await vi.waitFor(settled, { timeout: STALL_MS + 20_000, interval: 100 });
      expect(stalled).toMatchObject({ clientGone: true, status: 0 });

      // The server carries on; the send left nothing registered, in its view or the relay's.
      const listed = (await call("list_files")).structuredContent as { files: Sent[] };
      expect(listed.files.map((f) => f.name)).not.toContain("long.bin");
      const files = await apiCall(backend.relay.url, token, "GET", "/v1/files");
      expect((files.body.files as Sent[]).map((f) => f.name)).not.toContain("long.bin");
    });

    it("answers bad input with isError and the CLI's line", async () => {
      const missingPath = await call("send_file", {});
      expect(missingPath.isError).toBe(true);
      expect(textOf(missingPath)).toBe("airlock: send_file needs path");
      const extra = await call("list_files", { all: true });
      expect(textOf(extra)).toBe("airlock: list_files has no argument all; it takes no arguments");

      const missingFile = await call("send_file", { path: "missing.bin" });
      expect(missingFile.isError).toBe(true);
      expect(textOf(missingFile)).toBe(await cliLine(["send", "missing.bin"]));

      // A chat this session is not bound to: the file is sent, its delivery refused.
      await writeFile(join(work, "small.txt"), "a small file\n");
      const unbound = await call("send_file", { path: "small.txt", to: ["telegram:999"] });
      expect(unbound.isError).toBe(true);
      const line = await cliLine(["send", "--to", "telegram:999", "small.txt"]);
      expect(textOf(unbound).split("\n").at(-1)).toBe(line);
    });

    it("answers over quota and a revoked token with isError and the CLI's line", async () => {
      await writeFile(join(work, "quota.bin"), randomBytes(5000));
      const small = (await backend.relay.mintSession({ quotaBytes: 1000 })).token;
      const overQuota = await call("send_file", { path: "quota.bin" }, await serve(small));
      expect(overQuota.isError).toBe(true);
      expect(textOf(overQuota)).toBe(await cliLine(["send", "quota.bin"], small));

      const revoked = await backend.relay.mintSession();
      const session = await serve(revoked.token);
      const { adminToken, url } = backend.relay;
      const ended = await apiCall(url, adminToken, "DELETE", `/v1/sessions/${revoked.sessionId}`);
      expect(ended.status).toBeLessThan(300);
      const refused = await call("list_files", {}, session);
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toBe(await cliLine(["ls"], revoked.token));
    });

    it("answers protocol mistakes with JSON-RPC errors", async () => {
      const unknown = call("no_such_tool");
      await expect(unknown).rejects.toBeInstanceOf(McpError);
      await expect(unknown).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
      await expect(mcp.client.ping()).resolves.toEqual({});
    });
  });
});

describe("the POSIX shim", () => {
  it("refuses mcp with one line and exit 2", async () => {
    const scratch = await mkdtemp(join(tmpdir(), "airlock-mcp-posix-"));
    try {
      const posix = (await shimDrivers(scratch)).find((d) => d.name === "posix")!;
      const result = await runDriver(posix, ["mcp"], { env: {}, cwd: scratch, home: scratch });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(failureLine(result)).toBe(
        "airlock: mcp is not supported by the POSIX shim; use the Node or Python shim " +
          "($AIRLOCK_URL/shim/airlock.mjs or airlock.py)",
      );
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
