import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      "dist/",
      "sdk/dist/",
      ".wrangler/",
      "test/runtimes/",
      "worker-configuration.d.ts",
      "src/shim/bundle.generated.ts",
      "src/http/upload-page/sha256.generated.ts",
    ],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
);
