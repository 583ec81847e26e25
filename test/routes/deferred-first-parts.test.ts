import { describe, expect, it } from "vitest";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { errorOf, RelayClient } from "../support/relay-client";
import { declare, partBytes, putBytes, type MultipartAnswer } from "../support/send";

const MiB = 1024 * 1024;

/** A declare with `hashAtComplete` that carries its first parts' digests (docs/api.md). */
for (const backend of backends()) {
  describe(`first parts signed at declare on ${backend.name}`, () => {
    const client = new RelayClient(backend.env);

    async function uploadsOf(sessionId: string): Promise<number> {
      const row = await backend.env.DB.prepare(
        "SELECT count(*) AS n FROM uploads WHERE session_id = ?",
      )
        .bind(sessionId)
        .first<{ n: number }>();
      return row?.n ?? -1;
    }

    it("answers with part 1's signed PUT, which stores exactly those bytes", async () => {
      const { token } = await client.mintSession();
      const bytes = randomBytes(8 * MiB + 4096);
      const part1 = partBytes(bytes, 8 * MiB, 1);
      const parts = [{ partNumber: 1, sha256: await sha256Hex(part1) }];
      const body = { name: "f.bin", size: bytes.byteLength, hashAtComplete: true, parts };
      const response = await declare(client, token, body);
      expect(response.status).toBe(201);
      const answer = (await response.json()) as MultipartAnswer;
      expect(answer.parts.map((part) => part.partNumber)).toEqual([1]);
      expect(answer.missing).toEqual([1, 2]);
      // Other bytes than the digest it was signed with are refused by the store (or relay).
      const wrong = await putBytes(client, answer.parts[0]!.put, randomBytes(8 * MiB));
      expect(wrong.status).toBe(400);
      expect((await putBytes(client, answer.parts[0]!.put, part1)).status).toBe(200);
      const part2 = partBytes(bytes, answer.partSize, 2);
      const signed = await client.call("POST", `/v1/uploads/${answer.uploadId}/parts`, {
        token,
        json: { parts: [{ partNumber: 2, sha256: await sha256Hex(part2) }] },
      });
      const { parts: puts } = (await signed.json()) as Pick<MultipartAnswer, "parts">;
      expect((await putBytes(client, puts[0]!.put, part2)).status).toBe(200);
      const done = await client.call("POST", `/v1/uploads/${answer.uploadId}/complete`, {
        token,
        json: { sha256: await sha256Hex(bytes) },
      });
      expect(done.status).toBe(201);
      const file = (await done.json()) as { fileId: string };
      const content = await client.call("GET", `/v1/files/${file.fileId}/content`, { token });
      expect(await sha256Hex(await content.arrayBuffer())).toBe(await sha256Hex(bytes));
    });

    it("refuses a bad part digest or number before anything is stored", async () => {
      const { sessionId, token } = await client.mintSession();
      const size = 8 * MiB + 1;
      const sha256 = "a".repeat(64);
      const outside = await declare(client, token, {
        name: "f.bin",
        size,
        hashAtComplete: true,
        parts: [{ partNumber: 3, sha256 }],
      });
      expect(await errorOf(outside)).toEqual({
        status: 400,
        code: "invalid_request",
        message: "this upload has parts 1 to 2",
      });
      const badDigest = await declare(client, token, {
        name: "f.bin",
        size,
        hashAtComplete: true,
        parts: [{ partNumber: 1, sha256: "xyz" }],
      });
      expect(await errorOf(badDigest)).toEqual({
        status: 400,
        code: "invalid_request",
        message: "parts.0.sha256: must be 64 lowercase hex characters",
      });
      expect(await uploadsOf(sessionId)).toBe(0);
    });
  });
}
