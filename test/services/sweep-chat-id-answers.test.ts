import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { countChatIdAnswer } from "../../src/db/chat-id-answers";
import { CHAT_ID_LIMIT } from "../../src/services/chat-id";
import { sweep } from "../../src/services/sweep/sweep";
import { createBlobStore } from "../../src/storage";
import { depsAt } from "../support/deps";

const { windowMs } = CHAT_ID_LIMIT;

async function chatRows(): Promise<Array<{ chat: string; answers: number }>> {
  const { results } = await env.DB.prepare(
    "SELECT chat, answers FROM chat_id_answers ORDER BY chat",
  ).all<{ chat: string; answers: number }>();
  return results;
}

describe("sweep of /airlock answer counts", () => {
  const store = createBlobStore(readConfig(env), env);

  it("deletes a chat's count once its window has ended and keeps one still counting", async () => {
    const now = Date.UTC(2026, 10, 26, 12);
    await countChatIdAnswer(env.DB, "telegram:1001", now - windowMs - 1, windowMs); // ended
    await countChatIdAnswer(env.DB, "telegram:1002", now - windowMs, windowMs); // ends now
    await countChatIdAnswer(env.DB, "telegram:1003", now - windowMs + 1, windowMs); // 1 ms left
    await countChatIdAnswer(env.DB, "telegram:1003", now - 1000, windowMs);

    const result = await sweep(depsAt(env, store, now));

    expect(result.chatIdAnswersDeleted).toBe(2);
    expect(await chatRows()).toEqual([{ chat: "telegram:1003", answers: 2 }]);
    // The kept chat is still limited within its window; a swept one starts afresh, as it would have.
    expect(await countChatIdAnswer(env.DB, "telegram:1003", now, windowMs)).toBe(3);
    expect(await countChatIdAnswer(env.DB, "telegram:1001", now, windowMs)).toBe(1);
  });
});
