import type { Session } from "./db/sessions";
import type { Deps } from "./deps";
import type { Bindings } from "./env";

/** Who is calling: the operator, or a sandbox holding a session token. */
export type Caller = { kind: "operator" } | { kind: "session"; session: Session };

/** Hono's typing for every sub-app of the relay. */
export interface AppEnv {
  Bindings: Bindings;
  Variables: { deps: Deps; caller: Caller };
}
