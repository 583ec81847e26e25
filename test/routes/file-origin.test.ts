import { describe, expect, it } from "vitest";
import { AirlockClient, AirlockError, type FileOrigin } from "../../sdk/src/index";
import { hexToBase64 } from "../../src/encoding";
import type { FileRecord } from "../../src/wire-types";
import type { CreatedRequest } from "../../src/services/upload-links/upload-requests";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { PlatformFakes, uniqueChatId } from "../support/platform-fakes";
import { ADMIN_TOKEN, errorOf, ORIGIN, RelayClient } from "../support/relay-client";
import { rejectionOf } from "../support/rejection";
import { describe as describeBytes, upload } from "../support/send";

const fakes = new PlatformFakes();

interface TelegramRef {
  file_id: string;
  file_unique_id: string;
  file_size: number;
  file_path: string;
}

/** Each file record says where it came from, and `GET /v1/files?origin=` lists only those. */
for (const backend of backends()) {
  describe(`file origin on ${backend.name}`, { timeout: 60_000 }, () => {
    const client = new RelayClient(fakes.env(backend.env));

    async function ok<T>(response: Response, status: number): Promise<T> {
      expect(response.status, await response.clone().text()).toBe(status);
      return (await response.json()) as T;
    }

    async function list(token: string, query = ""): Promise<FileRecord[]> {
      const answer = await ok<{ files: FileRecord[] }>(
        await client.call("GET", `/v1/files${query}`, { token }),
        200,
      );
      return answer.files;
    }

    /** name → origin of the listed files, sorted by name. */
    const origins = (files: FileRecord[]) =>
      Object.fromEntries(
        files.map((file) => [file.name, file.origin]).sort(([a], [b]) => a!.localeCompare(b!)),
      );

    /** A session holding one file of every origin; their bytes, by name. */
    async function sessionOfEveryOrigin() {
      const chat = uniqueChatId();
      const { sessionId, token } = await client.mintSession({ destinations: [`telegram:${chat}`] });
      const bytes = new Map<string, Uint8Array>();
      const make = (name: string, size: number) => {
        const made = randomBytes(size);
        bytes.set(name, made);
        return made;
      };

      // The sandbox: a declared upload, a one-request upload.
      await upload(client, token, make("declared.bin", 3000), "declared.bin");
      const single = make("single.bin", 2000);
      const sha256 = await sha256Hex(single);
      const query = new URLSearchParams({
        name: "single.bin",
        size: String(single.byteLength),
        sha256,
        encoding: "identity",
        storedSha256: sha256,
      });
      /** POSTs `body` with its length and expects 201. */
      const post = async (path: string, who: string, body: Uint8Array) =>
        ok(
          await client.call("POST", path, {
            token: who,
            body,
            headers: { "content-length": String(body.byteLength) },
          }),
          201,
        );
      await post(`/v1/single-uploads?${query}`, token, single);
      // What the operator collected from the sandbox over exec counts as the sandbox's.
      const collected = make("collected.bin", 1500);
      await post(`/v1/sessions/${sessionId}/files?name=collected.bin`, ADMIN_TOKEN, collected);
      // The operator's seed.
      await post(
        `/v1/sessions/${sessionId}/inbox?name=data.csv`,
        ADMIN_TOKEN,
        make("data.csv", 1200),
      );

      // A person's attachment in the session's Telegram chat.
      const attachment = make("photo-note.txt", 2500);
      const ref = await fakes.addFile<TelegramRef>("telegram", "photo-note.txt", attachment);
      const webhook = await client.call("POST", "/webhooks/telegram", {
        json: {
          update_id: Math.floor(Math.random() * 1e9),
          message: {
            message_id: 1,
            date: 0,
            chat: { id: Number(chat), type: "private" },
            document: { ...ref, file_name: "photo-note.txt" },
          },
        },
        headers: { "x-telegram-bot-api-secret-token": "telegram-webhook-secret" },
      });
      expect(webhook.status).toBe(200);

      // A person's uploads through two upload links: curl -T, and the page's flow.
      const put = make("curl.bin", 1800);
      const first = await ok<CreatedRequest>(
        await client.call("POST", "/v1/requests", { token, json: { name: "curl.bin" } }),
        201,
      );
      await ok(await client.fetch(first.url, { method: "PUT", body: put }), 201);
      const paged = make("page.bin", 2200);
      const second = await ok<CreatedRequest>(
        await client.call("POST", "/v1/requests", { token, json: {} }),
        201,
      );
      await sendThroughPage(new URL(second.url).pathname, paged, "page.bin");
      return { sessionId, token, bytes };
    }

    /** The link page's flow in one part: start, PUT the part, complete. */
    async function sendThroughPage(path: string, bytes: Uint8Array, name: string): Promise<void> {
      const sha256 = await sha256Hex(bytes);
      const state = await ok<{ uploadId: string; missing: number[] }>(
        await client.call("POST", `${path}/uploads`, {
          json: { name, size: bytes.byteLength, sha256, partSha256: [sha256] },
        }),
        201,
      );
      expect(state.missing).toEqual([1]);
      const part = await client.call("PUT", `${path}/uploads/${state.uploadId}/parts/1`, {
        body: bytes,
        headers: {
          "content-length": String(bytes.byteLength),
          "x-amz-checksum-sha256": hexToBase64(sha256),
        },
      });
      expect(part.status, await part.clone().text()).toBe(204);
      await ok(await client.call("POST", `${path}/uploads/${state.uploadId}/complete`), 200);
    }

    it("records every file's origin and returns it in each record", async () => {
      const { sessionId, token, bytes } = await sessionOfEveryOrigin();
      const expected = {
        "collected.bin": "sandbox",
        "curl.bin": "upload-link",
        "data.csv": "seed",
        "declared.bin": "sandbox",
        "page.bin": "upload-link",
        "photo-note.txt": "chat:telegram",
        "single.bin": "sandbox",
      };
      const files = await list(token);
      expect(origins(files)).toEqual(expected);
      // The operator's view of the session says the same, and so does each file's own record.
      expect(origins(await list(ADMIN_TOKEN, `?sessionId=${sessionId}`))).toEqual(expected);
      for (const file of files) {
        const one = await ok<FileRecord>(
          await client.call("GET", `/v1/files/${file.fileId}`, { token }),
          200,
        );
        expect(one.origin).toBe(file.origin);
        expect(file.sha256).toBe(await sha256Hex(bytes.get(file.name)!));
      }
    });

    it("lists only the files of the origin asked for", async () => {
      const { sessionId, token, bytes } = await sessionOfEveryOrigin();
      const names = async (origin: string, who = token, extra = "") =>
        (await list(who, `?origin=${encodeURIComponent(origin)}${extra}`))
          .map((file) => file.name)
          .sort();
      expect(await names("sandbox")).toEqual(["collected.bin", "declared.bin", "single.bin"]);
      expect(await names("seed")).toEqual(["data.csv"]);
      expect(await names("chat:telegram")).toEqual(["photo-note.txt"]);
      expect(await names("chat:slack")).toEqual([]);
      expect(await names("upload-link")).toEqual(["curl.bin", "page.bin"]);
      // The operator's collect loop: one session, only what the sandbox made.
      expect(await names("sandbox", ADMIN_TOKEN, `&sessionId=${sessionId}`)).toEqual([
        "collected.bin",
        "declared.bin",
        "single.bin",
      ]);
      // A deduplicated send of the seed's bytes is the sandbox's own file.
      const { declared } = await describeBytes(bytes.get("data.csv")!, "copy.csv");
      const again = await ok<{ status: string; file: FileRecord }>(
        await client.call("POST", "/v1/uploads", { token, json: declared }),
        201,
      );
      expect(again).toMatchObject({ status: "deduped", file: { origin: "sandbox" } });
      expect(await names("seed")).toEqual(["data.csv"]);
    });

    it("the SDK's collect loop lists only what the sandbox made", async () => {
      const { sessionId, token } = await sessionOfEveryOrigin();
      const airlock = new AirlockClient({
        url: ORIGIN,
        adminToken: ADMIN_TOKEN,
        fetch: (url, init) => client.fetch(url, init),
      });
      const outputs = await airlock.listFiles({ sessionId, origin: "sandbox" });
      expect(outputs.map((file) => file.name).sort()).toEqual([
        "collected.bin",
        "declared.bin",
        "single.bin",
      ]);
      const sandbox = airlock.asSession(token);
      expect(
        (await sandbox.listFiles({ origin: "upload-link" })).map((f) => f.name).sort(),
      ).toEqual(["curl.bin", "page.bin"]);
      const refused = await rejectionOf<AirlockError>(
        airlock.listFiles({ sessionId, origin: "inputs" as FileOrigin }),
      );
      expect(refused).toBeInstanceOf(AirlockError);
      expect(refused).toMatchObject({ status: 400, code: "invalid_request" });
    });

    it.each([
      ["an unknown origin", "operator"],
      ["an unknown platform", "chat:irc"],
      ["a bare chat", "chat:"],
      ["an empty value", ""],
      ["a different case", "Sandbox"],
    ])("refuses %s with 400 invalid_request", async (_, origin) => {
      const { token } = await client.mintSession();
      const response = await client.call("GET", `/v1/files?origin=${encodeURIComponent(origin)}`, {
        token,
      });
      expect(await errorOf(response)).toEqual({
        status: 400,
        code: "invalid_request",
        message:
          "origin must be one of sandbox, seed, chat:telegram, chat:discord, chat:slack, " +
          `chat:whatsapp, upload-link; got ${JSON.stringify(origin)}`,
      });
    });
  });
}
