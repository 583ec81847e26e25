import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { findFile } from "../../src/db/files";
import { findSession } from "../../src/db/sessions";
import { findUpload } from "../../src/db/uploads";
import { fileResponse } from "../../src/http/file-response";
import { completeUpload } from "../../src/services/uploads/complete-upload";
import { multipartTarget, isMultipart } from "../../src/services/uploads/multipart-upload";
import { runVerifyJob } from "../../src/services/uploads/verify-upload";
import { untilJoined } from "../../src/services/uploads/queued-join";
import { AppError } from "../../src/errors";
import { MultipartUploadGoneError } from "../../src/storage/blob-store";
import { createBlobStore } from "../../src/storage";
import type { VerifyJob } from "../../src/verify-job";
import { backends } from "../support/backends";
import { randomBytes, sha256Hex } from "../support/bytes";
import { depsAt } from "../support/deps";
import { ORIGIN, RelayClient } from "../support/relay-client";
import {
  declare,
  describe as describeBytes,
  partBytes,
  partDigests,
  putBytes,
  type MultipartAnswer,
} from "../support/send";

const MiB = 1024 * 1024;
/** Two parts, past the 4 MiB that `complete` still assembles and reads back itself. */
const TWO_PARTS = 8 * MiB + 4096;

for (const backend of backends()) {
  describe(`a large multipart upload joined on the queue (${backend.name})`, () => {
    const client = new RelayClient(backend.env);
    const store = createBlobStore(readConfig(backend.env), backend.env);

    /**
     * Declares and PUTs every part of a fresh upload, then completes it through the service
     * with a queue the test runs by hand: the job `complete` queued is returned, not run.
     */
    async function completedBeforeJoin() {
      const { token, sessionId } = await client.mintSession();
      const bytes = randomBytes(TWO_PARTS);
      const { declared, stored } = await describeBytes(bytes, "weights.bin", "identity");
      const partSha256 = await partDigests(stored, bytes.byteLength);
      const answer = (await (
        await declare(client, token, { ...declared, partSha256 })
      ).json()) as MultipartAnswer;
      for (const part of answer.parts) {
        const put = await putBytes(
          client,
          part.put,
          partBytes(stored, answer.partSize, part.partNumber),
        );
        expect(put.status).toBe(200);
      }
      const queued: VerifyJob[] = [];
      const deps = depsAt(backend.env, store, Date.now(), queued);
      const session = await findSession(backend.env.DB, sessionId);
      const record = await completeUpload(deps, session!, answer.uploadId, ORIGIN);
      const upload = await findUpload(backend.env.DB, answer.uploadId);
      if (!upload || !isMultipart(upload)) throw new Error("not a multipart upload");
      expect(queued).toEqual([{ uploadId: upload.id, fileId: record.fileId }]);
      return { deps, job: queued[0]!, record, upload, bytes, token };
    }

    it("answers complete before the store joins the parts; a read waits for the queue's join", async () => {
      const { deps, job, record, upload, bytes } = await completedBeforeJoin();
      expect(record.status).toBe("pending");
      expect(await store.head(upload.storedKey)).toBeNull();

      const file = await findFile(backend.env.DB, record.fileId);
      let answered = false;
      const reading = fileResponse(store, file!, new Request(`${ORIGIN}/content`)).finally(() => {
        answered = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(answered).toBe(false);

      expect(await runVerifyJob(deps, job)).toBe("verified");
      const response = await reading;
      expect(response.status).toBe(200);
      expect(await sha256Hex(await response.arrayBuffer())).toBe(await sha256Hex(bytes));
      expect((await findFile(backend.env.DB, record.fileId))?.verified).toBe(true);
    });

    it("gives a read up with 503 file_assembling when the join does not come", async () => {
      const { record, upload } = await completedBeforeJoin();
      const file = await findFile(backend.env.DB, record.fileId);
      const refused = await untilJoined(store, file!, [10, 10]).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(AppError);
      expect(refused).toMatchObject({ code: "file_assembling", status: 503 });
      expect(await store.head(upload.storedKey)).toBeNull();
    });

    it("deletes the file, keeping nothing, when the store lost its parts before the join", async () => {
      const { deps, job, record, upload } = await completedBeforeJoin();
      await store.abortMultipartUpload(multipartTarget(upload));

      expect(await runVerifyJob(deps, job)).toBe("rejected");
      expect(await findFile(backend.env.DB, record.fileId)).toBeNull();
      expect((await findUpload(backend.env.DB, upload.id))?.status).toBe("rejected");
      expect(await store.head(upload.storedKey)).toBeNull();
    });

    it("drops the parts of a file deleted before its join, and joins nothing", async () => {
      const { deps, job, record, upload, token } = await completedBeforeJoin();
      const deleted = await client.call("DELETE", `/v1/files/${record.fileId}`, { token });
      expect(deleted.status).toBe(200);

      expect(await runVerifyJob(deps, job)).toBe("nothing_to_do");
      // S3 no longer knows the upload; R2's ledger of parts is empty.
      const parts = await store
        .listParts(multipartTarget(upload))
        .catch((error: unknown) =>
          error instanceof MultipartUploadGoneError ? [] : Promise.reject(error),
        );
      expect(parts).toEqual([]);
      expect(await store.head(upload.storedKey)).toBeNull();
    });
  });
}
