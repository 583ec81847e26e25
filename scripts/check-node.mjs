#!/usr/bin/env node
// Run before `npm start` and `npm test`: the Node version working on the project needs (the
// test runner's Vite and the linter want 20.19 or 22.12; wrangler 20.3), in one line instead
// of an error from deep inside one of them. package.json's "engines" is the SDK's (Node 18+).
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (!((major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major > 22)) {
  console.error(
    `airlock: Node ${process.versions.node} is too old for npm start and npm test; use Node 20.19+ or 22.12+`,
  );
  process.exit(1);
}
