/**
 * The relay's layers, top to bottom; a module may import code only from its own layer or below
 * (`npm run lint` runs this; a type-only import may name a type of a higher layer, such as the
 * `Deps` container, but no import, of either kind, may close a cycle). Entry (index, app) → routes → http → services and mcp → the
 * dependency container (deps, config) → platforms | storage (peers: neither imports the
 * other) → auth → db → the base (content, names, errors, log, ids, encoding, wire types…).
 */
const LAYERS = [
  { name: "entry", path: "^src/(index|app)\\.ts$" },
  { name: "routes", path: "^src/routes/" },
  { name: "http", path: "^src/http/" },
  { name: "services", path: "^src/(services|mcp)/" },
  { name: "container", path: "^src/(deps|config)\\.ts$" },
  { name: "platforms", path: "^src/platforms/" },
  { name: "storage", path: "^src/storage/" },
  { name: "auth", path: "^src/auth/" },
  { name: "db", path: "^src/db/" },
];

/** Each layer may not import any layer above it; platforms and storage not each other. */
const layerRules = LAYERS.flatMap((layer, index) =>
  LAYERS.slice(0, index).map((above) => ({
    name: `${layer.name}-not-to-${above.name}`,
    comment: `${layer.name} sits below ${above.name}: it must not import it`,
    severity: "error",
    from: { path: layer.path },
    to: { path: above.path, dependencyTypesNot: ["type-only"] },
  })),
).concat([
  {
    name: "platforms-not-to-storage",
    comment: "platforms and storage are peers behind their own interfaces",
    severity: "error",
    from: { path: "^src/platforms/" },
    to: { path: "^src/storage/", dependencyTypesNot: ["type-only"] },
  },
  {
    name: "storage-not-to-platforms",
    comment: "platforms and storage are peers behind their own interfaces",
    severity: "error",
    from: { path: "^src/storage/" },
    to: { path: "^src/platforms/", dependencyTypesNot: ["type-only"] },
  },
  {
    name: "base-not-to-layers",
    comment:
      "the base modules (src/*.ts outside the layers, content/, shim/) import only each other",
    severity: "error",
    from: {
      path: "^src/([^/]+\\.ts|content/|shim/)",
      pathNot: "^src/(index|app|deps|config)\\.ts$",
    },
    to: { path: LAYERS.map((layer) => layer.path).join("|"), dependencyTypesNot: ["type-only"] },
  },
]);

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "an import cycle: the modules cannot be read (or loaded) one after the other",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    exclude: { path: "\\.generated\\.ts$" },
  },
};
