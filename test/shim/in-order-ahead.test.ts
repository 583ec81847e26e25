// The scheduler that keeps the Node shim's gzip threads busy (issue 29 §2): work starts as soon as
// a place frees, not when the reader takes a result; results still come in order, memory bounded.
import { describe, expect, it } from "vitest";
import { inOrderAhead } from "../../agent-shim/src/upload/in-order-ahead";

/** Work whose end the test decides: `finish(i)` settles item i. */
function controlled() {
  const started: number[] = [];
  const ends = new Map<number, { resolve: (v: string) => void; reject: (e: Error) => void }>();
  const work = (i: number) =>
    new Promise<string>((resolve, reject) => {
      started.push(i);
      ends.set(i, { resolve, reject });
    });
  const finish = (i: number) => ends.get(i)!.resolve(`r${i}`);
  const fail = (i: number) => ends.get(i)!.reject(new Error(`work ${i} failed`));
  return { started, work, finish, fail };
}

async function* count(n: number, closed?: { value: boolean }): AsyncGenerator<number> {
  try {
    for (let i = 0; i < n; i++) yield i;
  } finally {
    if (closed) closed.value = true;
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("inOrderAhead", () => {
  it("starts the next item when any place frees, before the reader takes the oldest, and yields in order", async () => {
    const { started, work, finish } = controlled();
    const results = inOrderAhead(count(6), work, 2, 3);
    const first = results.next();
    await settle();
    expect(started).toEqual([0, 1]);
    finish(1); // the second ends first: its place goes to item 2 though item 0 is not taken
    await settle();
    expect(started).toEqual([0, 1, 2]);
    finish(2);
    await settle();
    expect(started).toEqual([0, 1, 2, 3]);
    finish(3);
    await settle();
    expect(started).toEqual([0, 1, 2, 3]); // 1, 2 and 3 wait to be taken: `held` reached
    finish(0);
    expect(await first).toEqual({ done: false, value: "r0" });
    const second = results.next();
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(await second).toEqual({ done: false, value: "r1" });
    finish(4);
    const third = results.next();
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    finish(5);
    const rest: string[] = [(await third).value as string];
    for await (const r of results) rest.push(r);
    expect(rest).toEqual(["r2", "r3", "r4", "r5"]);
  });

  it("surfaces a failed item in its turn and closes the source when the reader stops", async () => {
    const { work, finish, fail } = controlled();
    const closed = { value: false };
    const results = inOrderAhead(count(100, closed), work, 2, 2);
    const first = results.next();
    const second = first.then(() => results.next());
    await settle();
    fail(1);
    finish(0);
    expect(await first).toEqual({ done: false, value: "r0" });
    await expect(second).rejects.toThrow("work 1 failed");
    expect(closed.value).toBe(true);
  });

  it("yields every result before a failure of the source itself", async () => {
    async function* broken(): AsyncGenerator<number> {
      yield 0;
      yield 1;
      throw new Error("read failed");
    }
    const seen: number[] = [];
    const all = async () => {
      for await (const r of inOrderAhead(broken(), async (i) => i * 10, 3, 6)) seen.push(r);
    };
    await expect(all()).rejects.toThrow("read failed");
    expect(seen).toEqual([0, 10]);
  });
});
