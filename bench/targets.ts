import type { Row } from "./context";
import { DIR_BASELINE, DIR_SHIM } from "./directory";
import type { Kind } from "./corpus";
import { formatMs, formatSize, MiB } from "./format";
import type { Results } from "./plan";

/** One target of the issue, with what was measured against it. */
export interface Target {
  name: string;
  measured: string;
  result: "PASS" | "FAIL" | "not measured";
}

export type Measurements = Pick<Results, "rows" | "partRows" | "dedups" | "dirRows" | "resume">;

const find = (rows: Row[], kind: Kind, size: number, tool: string) =>
  rows.find((r) => r.kind === kind && r.size === size && r.label === kind && r.tool === tool);
const shimOf = (rows: Row[], kind: Kind, size: number) => find(rows, kind, size, "airlock send");
const curlOf = (rows: Row[], kind: Kind, size: number) =>
  find(rows, kind, size, "curl -T (presigned PUT)");

function target(name: string, measured: string | undefined, pass: boolean): Target {
  return measured === undefined
    ? { name, measured: "—", result: "not measured" }
    : { name, measured, result: pass ? "PASS" : "FAIL" };
}

/** Every target of the issue, evaluated on what this run measured. */
export function evaluateTargets({
  rows,
  partRows,
  dedups,
  dirRows,
  resume,
}: Measurements): Target[] {
  const big = 128 * MiB;
  const targets: Target[] = [];

  const rShim = shimOf(rows, "random", big);
  const rCurl = curlOf(rows, "random", big);
  const rRatio = rShim && rCurl ? rShim.wallMs / rCurl.wallMs : NaN;
  targets.push(
    target(
      "random 128 MiB: airlock send ≤ 1.3× curl",
      rShim && rCurl
        ? `${rRatio.toFixed(2)}× (${formatMs(rShim.wallMs)} vs ${formatMs(rCurl.wallMs)})`
        : undefined,
      rRatio <= 1.3,
    ),
  );

  const tShim = shimOf(rows, "text", big);
  const tCurl = curlOf(rows, "text", big);
  const share = tShim ? tShim.bytesSent / tShim.size : NaN;
  targets.push(
    target(
      "text 128 MiB: sends ≤ 25 % of its bytes",
      tShim ? `${(share * 100).toFixed(1)} % (${formatSize(tShim.bytesSent)})` : undefined,
      share <= 0.25,
    ),
  );
  targets.push(
    target(
      "text 128 MiB: airlock send beats curl on wall time",
      tShim && tCurl
        ? `${formatMs(tShim.wallMs)} vs ${formatMs(tCurl.wallMs)} (${(tShim.wallMs / tCurl.wallMs).toFixed(2)}×)`
        : undefined,
      !!tShim && !!tCurl && tShim.wallMs < tCurl.wallMs,
    ),
  );

  for (const kind of ["random", "text"] as const) {
    const shim = shimOf(rows, kind, 16 * MiB);
    const exec = find(rows, kind, 16 * MiB, "base64 over exec");
    const speedup = shim && exec ? exec.wallMs / shim.wallMs : NaN;
    targets.push(
      target(
        `${kind} 16 MiB: ≥ 20× faster than base64 over exec`,
        shim && exec
          ? `${speedup.toFixed(1)}× (${formatMs(shim.wallMs)} vs ${formatMs(exec.wallMs)})`
          : undefined,
        speedup >= 20,
      ),
    );
  }

  const gShim = shimOf(rows, "random", 1024 * MiB);
  const gCurl = curlOf(rows, "random", 1024 * MiB);
  const gParts = partRows.find((r) => r.tool.startsWith("curl") && r.size === 1024 * MiB);
  targets.push(
    target(
      "random 1 GiB: airlock send (in parts) ≤ 1.3× curl -T (one PUT)",
      gShim && gCurl
        ? `${(gShim.wallMs / gCurl.wallMs).toFixed(2)}× (${formatMs(gShim.wallMs)} vs ${formatMs(gCurl.wallMs)})`
        : undefined,
      !!gShim && !!gCurl && gShim.wallMs <= 1.3 * gCurl.wallMs,
    ),
  );
  targets.push(
    target(
      "random 1 GiB: airlock send ≤ 1.3× curl --parallel of the same part PUTs",
      gShim && gParts
        ? `${(gShim.wallMs / gParts.wallMs).toFixed(2)}× (${formatMs(gShim.wallMs)} vs ${formatMs(gParts.wallMs)})`
        : undefined,
      !!gShim && !!gParts && gShim.wallMs <= 1.3 * gParts.wallMs,
    ),
  );

  for (const kind of ["random", "text"] as const) {
    const shim = shimOf(rows, kind, 1024 * MiB);
    targets.push(
      target(
        `${kind} 1 GiB: shim peak RSS ≤ 96 MiB`,
        shim ? `${shim.rssMiB.toFixed(1)} MiB` : undefined,
        !!shim && shim.rssMiB <= 96,
      ),
    );
  }

  for (const dedup of dedups) {
    const budget = dedup.sha256sum.wallMs + 2 * dedup.probe.wallMs;
    const name = `${dedup.resend.kind} ${formatSize(dedup.resend.size)}: dedup re-send ≤ sha256sum + 2 requests`;
    const measured =
      `${formatMs(dedup.resend.wallMs)} vs ${formatMs(budget)} ` +
      `(${formatMs(dedup.sha256sum.wallMs)} + 2 × ${formatMs(dedup.probe.wallMs)})`;
    targets.push(
      dedup.resend.size === big
        ? target(name, measured, dedup.resend.wallMs <= budget)
        : { name, measured: `${measured}, not at 128 MiB`, result: "not measured" },
    );
    // Content held only in another owner scope: one upload, as for content nobody holds.
    const { otherScope, fresh } = dedup;
    const ratio = otherScope.wallMs / fresh.wallMs;
    targets.push(
      target(
        `${otherScope.kind} ${formatSize(otherScope.size)}: send of content held only in another scope ≈ a fresh send (≤ 1.2×, bytes uploaded)`,
        `${ratio.toFixed(2)}× (${formatMs(otherScope.wallMs)} vs ${formatMs(fresh.wallMs)}), ` +
          `${otherScope.bytesSent} vs ${fresh.bytesSent} bytes`,
        ratio <= 1.2 && otherScope.bytesSent > 0,
      ),
    );
  }
  const dirShim = dirRows.find((r) => r.tool === DIR_SHIM);
  const dirBase =
    dirShim && dirRows.find((r) => r.label === dirShim.label && r.tool === DIR_BASELINE);
  const dirName = "directory of 10,000 small files: airlock send dir/ ≤ 1.2× tar czf + curl -T";
  if (dirShim && dirBase) {
    const ratio = dirShim.wallMs / dirBase.wallMs;
    const measured = `${ratio.toFixed(2)}× (${formatMs(dirShim.wallMs)} vs ${formatMs(dirBase.wallMs)})`;
    targets.push(
      dirShim.label === "dir, 10,000 files"
        ? target(dirName, measured, ratio <= 1.2)
        : {
            name: dirName,
            measured: `${measured}, ${dirShim.label.slice(5)} only`,
            result: "not measured",
          },
    );
  } else {
    targets.push(target(dirName, undefined, false));
  }
  const resumeName = "1 GiB send killed at 50 %: the re-run sends ≤ the missing parts + one part";
  if (resume) {
    const measured =
      `${formatSize(resume.resentBytes)} re-sent, ${formatSize(resume.missingBytes)} missing; ` +
      `killed + re-run ${((resume.killedAfterMs + resume.resumeMs) / resume.fullMs).toFixed(2)}× an uninterrupted send`;
    const pass = resume.resentBytes <= resume.missingBytes + resume.partSize;
    targets.push(
      resume.size === 1024 * MiB
        ? target(resumeName, measured, pass)
        : {
            name: resumeName,
            measured: `${measured}, ${formatSize(resume.size)} only`,
            result: "not measured",
          },
    );
  } else {
    targets.push(target(resumeName, undefined, false));
  }
  return targets;
}
