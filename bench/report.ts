import { readFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import type { Row } from "./context";
import { DIR_BASELINE } from "./directory";
import { formatMs, formatRatio, formatRss, formatSent, formatSize, MiB } from "./format";
import type { Resume } from "./multipart";
import type { Results } from "./plan";
import type { Target } from "./targets";

/** What a run measured (`Results`), the targets judged on it, and how the run went. */
export interface Report extends Results {
  quick: boolean;
  runs: number;
  startedAt: Date;
  totalMs: number;
  /** The 1-minute load average when the run started (other work on the machine skews times). */
  loadAtStart: number;
  targets: Target[];
  warnings: string[];
}

function cpuModel(): string {
  const line = readFileSync("/proc/cpuinfo", "utf8").match(/^model name\s*:\s*(.+)$/m);
  return line?.[1]?.trim() ?? cpus()[0]?.model ?? "unknown";
}

const curlWall = (rows: Row[], row: Row) =>
  rows.find((r) => r.kind === row.kind && r.size === row.size && r.tool.startsWith("curl"))?.wallMs;

function table(header: string[], body: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...body.map(line)].join("\n");
}

function rowCells(row: Row, curlMs: number | undefined): string[] {
  return [
    row.label,
    formatSize(row.size),
    row.tool,
    String(row.runs),
    formatMs(row.wallMs),
    formatRatio(curlMs === undefined ? NaN : row.wallMs / curlMs),
    formatSent(row.bytesSent, row.size),
    formatRss(row.rssMiB),
  ];
}

const HEADER = [
  "case",
  "size",
  "tool",
  "runs",
  "wall (median)",
  "× curl",
  "bytes sent",
  "peak RSS",
];

/** A directory row's wall time over the baseline's (tar czf + curl -T) for the same tree. */
const baselineWall = (rows: Row[], row: Row) =>
  row.label.endsWith(", by steps")
    ? undefined
    : rows.find((r) => r.label === row.label && r.tool === DIR_BASELINE)?.wallMs;

function resumeTable(r: Resume): string {
  const missingShare = r.missingBytes / r.size;
  return table(
    [
      "size",
      "uninterrupted send",
      "killed after",
      "re-run",
      "killed + re-run vs uninterrupted",
      "re-run vs uninterrupted × missing share",
      "parts missing after the kill",
      "bytes re-sent / missing",
    ],
    [
      [
        formatSize(r.size),
        formatMs(r.fullMs),
        formatMs(r.killedAfterMs),
        formatMs(r.resumeMs),
        formatRatio((r.killedAfterMs + r.resumeMs) / r.fullMs),
        formatRatio(r.resumeMs / (r.fullMs * missingShare)),
        `${r.missingParts} of ${r.partCount} (${formatSize(r.partSize)} each)`,
        `${formatSize(r.resentBytes)} / ${formatSize(r.missingBytes)}`,
      ],
    ],
  );
}

/** The whole report as markdown. */
export function renderReport(report: Report): string {
  const { rows, gzipRows, stepRows, dedups, dirRows, partRows, resume, targets, warnings } = report;
  const dedupRows = dedups.flatMap((d) => [
    d.resend,
    d.sha256sum,
    d.nodeHash,
    d.probe,
    d.otherScope,
    d.fresh,
  ]);
  const out = [
    "# Airlock send benchmark",
    "",
    `- Date: ${report.startedAt.toISOString()}`,
    `- Mode: ${report.quick ? "--quick (1 and 16 MiB, a directory of 1,000 files, 1 run each)" : `full (median of ${report.runs} runs up to 128 MiB and for the directory of 10,000 files; 1 run for base64 over exec at 128 MiB and for 1 GiB)`}`,
    `- Machine: ${cpus().length} cores, ${(totalmem() / 1024 / MiB).toFixed(1)} GiB RAM, ${cpuModel()}, Node ${process.version}`,
    "- Store: `wrangler dev` (workerd) with local R2 and D1 on loopback (127.0.0.1); R2 backend, so every PUT goes client → relay Worker → local R2",
    `- Load average (1 min): ${report.loadAtStart.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end`,
    `- Total benchmark time: ${formatMs(report.totalMs)}`,
    "",
    "## Send: airlock vs curl vs base64 over exec",
    "",
    table(
      HEADER,
      rows.map((row) => rowCells(row, curlWall(rows, row))),
    ),
    "",
    "## gzip level (shim, fresh text each send)",
    "",
    table(
      HEADER,
      gzipRows.map((row) => rowCells(row, curlWall(rows, row))),
    ),
    "",
    "## Where a gzip send's time goes (the shim's steps done by hand)",
    "",
    table(
      HEADER,
      stepRows.map((row) => rowCells(row, undefined)),
    ),
    "",
    "## Dedup re-send and what it should cost",
    "",
    table(
      HEADER,
      dedupRows.map((row) => rowCells(row, undefined)),
    ),
    "",
    "## Directory: airlock send dir/ vs tar czf + curl -T",
    "",
    table(
      HEADER.map((cell) => (cell === "× curl" ? "× tar + curl" : cell)),
      dirRows.map((row) => rowCells(row, baselineWall(dirRows, row))),
    ),
    "",
    "## Large sends: parts in flight (AIRLOCK_UPLOAD_CONCURRENCY)",
    "",
    table(
      HEADER.map((cell) => (cell === "× curl" ? "× curl parts" : cell)),
      partRows.map((row) => rowCells(row, curlWall(partRows, row))),
    ),
    "",
    "## Large sends: killed with SIGKILL at 50 %, then run again",
    "",
    resume ? resumeTable(resume) : "not measured",
    "",
    "## Targets",
    "",
    table(
      ["target", "measured", "result"],
      targets.map((t) => [t.name, t.measured, t.result]),
    ),
    "",
    "## Warnings",
    "",
    ...(warnings.length ? warnings.map((w) => `- ${w}`) : ["- none"]),
    "",
    "## Method",
    "",
    "- Files are generated once per size (random bytes; deterministic log-like text) in a temp dir; before every non-dedup send the first 16 bytes (random) or the first line (text) are rewritten, so each send carries unseen content of the same size and kind.",
    "- Wall time is from spawn to exit of the process (node start-up included for the shim); peak RSS is GNU `time -f %M` of that process (largest over the runs).",
    "- `curl -T`: identity upload declared untimed (hash + `POST /v1/uploads`), then only the PUT to the presigned URL is timed, with the signed headers; `Expect:` is cleared because `wrangler dev` never answers `100 Continue` and curl would idle 1 s per PUT. Bytes sent = the file size.",
    "- `airlock send`: `node dist/airlock.mjs send <file> --json`; bytes sent = its `uploadedBytes` (gzip output for text).",
    "- base64 over exec: 48 KiB raw → 64 KiB base64 per chunk, each appended by its own `sh -c 'printf %s \"$1\" >> out.b64' sh <chunk>`, then `base64 -d`; a driver node process runs it under GNU time. Local spawns only, so a lower bound for a real exec channel; bytes sent = base64 bytes.",
    "- Steps by hand (largest text size): node zlib level 1 into a temp file (in-process), `curl -T` of the gzip bytes to a gzip-declared upload, then `POST /v1/uploads/:id/complete`, timed in-process: it registers the file; for gzip the relay reads the object back, inflates it and hashes it (in the request up to 4 MiB stored, above that on the verify queue after answering).",
    "- Directory: a deterministic tree of small source-like text files (200 B – 8 KiB, log-uniform; 40 per leaf directory, leaves 1–3 levels deep) in the temp dir; before every send one file's first line is rewritten (same size), so each archive is unseen. Size = the files' bytes; bytes sent = the `.tar.gz` (shim: its `uploadedBytes`, gzip level 1; tar: GNU tar's default gzip -6).",
    "- `airlock send <dir>`: `node dist/airlock.mjs send <dir> --json`, spawn to exit (walk, tar, gzip and hash into a temp file, declare, PUT, complete). Baseline: `tar czf <tmp>/<dir>.tar.gz -C <parent> <dir>` timed, then (untimed) the archive is hashed and declared with `POST /v1/uploads`, then `curl -T <dir>.tar.gz` to the presigned PUT timed (as above), then complete (untimed); its wall = tar + curl. `tar czf - dir | curl -T -` cannot be measured as such: the presigned PUT is signed for an exact Content-Length and x-amz-checksum-sha256, declared before the bytes go.",
    "- Dedup budget = median `sha256sum` of the file + 2 × median `POST /v1/uploads` probe by curl (a fresh process and connection each).",
    "- After every upload the relay reads the bytes back (gzip: inflates; parts: re-hashes the whole object) once it has answered. So that no measurement pays for the previous one: up to 64 MiB the benchmark waits (untimed) until the dedup probe hits; above, it starts a fresh relay and warms it up with three small uploads (quicker than waiting for the read-back of a large multipart object).",
    "- Parts baseline: the file cut into 8 MiB part files and declared as a multipart upload (untimed), then one `curl --parallel --parallel-max 4 -K <config>` PUTs every part to its signed URL with its signed headers (timed), then complete (untimed).",
    "- Parts in flight: one send of a fresh variant of the random file per `AIRLOCK_UPLOAD_CONCURRENCY` (8 MiB parts above 64 MiB of stored bytes; on R2 each part is a PUT to the relay, which hashes it into the binding's multipart upload).",
    "- Resume: an uninterrupted send of a fresh variant; then another fresh variant sent with its own cache dir, polled with `GET /v1/uploads/:id` (upload id from the shim's state file) every 50 ms and sent SIGKILL once the relay reports half the parts stored; then the same `airlock send` again, spawn to exit. Bytes re-sent = its `uploadedBytes`; missing = the parts `GET /v1/uploads/:id` listed as missing after the kill. The second run hashes the whole file again before it asks the relay (the state file is keyed by path, size, mtime and SHA-256).",
    "",
  ];
  return out.join("\n");
}
