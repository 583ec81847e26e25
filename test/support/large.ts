import { it } from "vitest";

/**
 * Cases that need hundreds of MiB to prove their point (flat memory while streaming a file
 * larger than the process could hold). `npm test` skips them; `npm run test:large`, which CI
 * also runs, runs only them. Their names end in "(large)", which is how that script picks them.
 */
export const itLarge = it.runIf(process.env.AIRLOCK_TEST_LARGE === "1");
