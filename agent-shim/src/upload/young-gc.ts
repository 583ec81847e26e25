import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

type Collect = (options: { type: "minor" }) => void;

let collect: Collect | null | undefined;

/**
 * A young-generation GC (a scavenge, well under a millisecond when little is alive), asked for
 * by code that turns over many short-lived buffers. A gzip send makes a new buffer for every
 * member and every chunk of every part it PUTs, a gigabyte and more per GiB of text; V8 collects
 * them only once tens of MiB of them have piled up, and malloc keeps the pages it gave them, so
 * without this the send's resident memory ends 20–25 MiB above what it holds. Node does not
 * export V8's `gc` without `--expose-gc`; that flag set at run time gives it to contexts made
 * afterwards, so it is taken from a fresh one. Where that fails, nothing is collected early.
 */
export function youngGc(): void {
  if (collect === undefined) collect = gcFunction();
  collect?.({ type: "minor" });
}

function gcFunction(): Collect | null {
  try {
    setFlagsFromString("--expose-gc");
    const gc: unknown = runInNewContext("gc");
    return typeof gc === "function" ? (gc as Collect) : null;
  } catch {
    return null;
  }
}
