import { expect } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import type { ShimResult } from "./run-shim";

/** The one `send --json` line of a run that succeeded quietly. */
export function sentLine(result: ShimResult): SendResult {
  expect(result.stderr, result.stderr).toBe("");
  expect(result.code).toBe(0);
  const lines = result.stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as SendResult;
}
