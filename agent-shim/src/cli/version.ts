/** Replaced at bundle time by scripts/build-shim.mjs with the version from package.json. */
declare const __AIRLOCK_VERSION__: string;

/** The shim's version, as printed by `airlock --version` and sent in its User-Agent. */
export const VERSION: string =
  typeof __AIRLOCK_VERSION__ === "string" ? __AIRLOCK_VERSION__ : "0.0.0-dev";

/** The User-Agent of every request the shim makes. */
export const USER_AGENT = `airlock-shim/${VERSION} node/${process.versions.node}`;
