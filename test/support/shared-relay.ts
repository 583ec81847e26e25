import { inject } from "vitest";
import { mintSessionAt, type RunningRelay } from "./relay";

/**
 * The run's shared relay (`wrangler dev` on the embedded default storage, started once by the
 * node project's set-up): for suites whose tests mint sessions of their own and need no
 * settings, restart or log of their own. Stopping it is left to the set-up.
 */
export function sharedRelay(): RunningRelay {
  const { url, adminToken, logPath } = inject("sharedRelay");
  const notOurs = (what: string) => () => {
    throw new Error(`the shared relay cannot ${what}: start a relay of the suite's own`);
  };
  return {
    url,
    adminToken,
    logPath,
    processGroup: 0,
    output: () => `(the shared relay's log is ${logPath})`,
    mintSession: (body = {}) => mintSessionAt(url, body),
    crashAndRestart: notOurs("crash and restart"),
    runScheduled: notOurs("run the sweep"),
    stop: async () => {},
  };
}
