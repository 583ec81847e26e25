import type { InboxRecord } from "../../src/wire-types";

/**
 * The operator's seed (`POST /v1/sessions/:id/inbox`): puts `bytes` in the session's inbox under
 * `name` on a real relay, as `airlock pull` then finds it. Throws unless the relay answers 201.
 */
export async function seedInbox(
  relay: { url: string; adminToken: string },
  sessionId: string,
  name: string,
  bytes: Uint8Array,
): Promise<InboxRecord> {
  const response = await fetch(
    `${relay.url}/v1/sessions/${sessionId}/inbox?name=${encodeURIComponent(name)}`,
    {
      method: "POST",
      headers: {
        authorization: `Bearer ${relay.adminToken}`,
        "content-length": String(bytes.byteLength),
      },
      body: bytes,
    },
  );
  if (response.status !== 201)
    throw new Error(`seeding ${name} failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as InboxRecord;
}
