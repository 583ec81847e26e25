/**
 * Issue 14's two start-up cases. Small files: `airlock send` of 16 KiB and 1 MiB (one request
 * through the relay) against `curl -T` of the same bytes to the relay's presigned PUT and a bare
 * `node -e 0`; target (issue 29): send ≤ 1.1 × a bare node:http script making the shim's one
 * request, medians of the same run. Three floors beside them: the
 * same presigned PUT from a bare node:http script (what any Node client pays), curl making the
 * shim's one request (what the relay's route costs beside a presigned PUT), and a bare
 * node:http script making that one request (the floor under any Node client sending that way).
 * The unchanged re-send: a 1 GiB file sent once, then sent again unchanged (the shim's sent
 * cache skips hashing: a stat and one dedup request); target: re-send − bare node − the
 * request ≤ 50 ms.
 */
import http from "node:http";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { freshShimSend } from "./cases";
import { curlPut, curlSingleUpload, nodePut, nodeSingleUpload } from "./baselines";
import { remeasureOn503, summarize, type Context, type Row, type Sample } from "./context";
import { createFile } from "./corpus";
import { MiB, formatMs, formatSize } from "./format";
import { describe as describeFile, type Session } from "./relay-api";
import { shimSend } from "./shim";

/** One figure against its target, for the report. */
export interface StartupCheck {
  what: string;
  measuredMs: number;
  limitMs: number;
  met: boolean;
}

/** A row with its fastest run too: on a shared, loaded machine the fastest is the least disturbed. */
export interface StartupRow extends Row {
  minMs: number;
}

export interface StartupResults {
  rows: StartupRow[];
  checks: StartupCheck[];
}

function startupRow(...args: Parameters<typeof summarize>): StartupRow {
  return { ...summarize(...args), minMs: Math.min(...args[3].map((s) => s.wallMs)) };
}

/** A bare Node start, the floor under every shim run. */
export async function bareNode(ctx: Context, runs: number): Promise<Sample[]> {
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    const run = await ctx.meter.run(process.execPath, ["-e", "0"]);
    samples.push({ wallMs: run.wallMs, rssMiB: run.rssMiB, bytesSent: NaN });
  }
  return samples;
}

/** Small files: send vs curl -T vs bare node, interleaved, `runs` each. */
export async function smallFiles(ctx: Context, runs: number): Promise<StartupResults> {
  const rows: StartupRow[] = [];
  const checks: StartupCheck[] = [];
  for (const size of [16 * 1024, MiB]) {
    const file = await createFile(ctx.tmpDir, "random", size);
    try {
      const send: Sample[] = [];
      const curl: Sample[] = [];
      const node: Sample[] = [];
      const nodeClient: Sample[] = [];
      const curlOneRequest: Sample[] = [];
      const nodeOneRequest: Sample[] = [];
      const type = "application/octet-stream";
      const fresh = (what: string, measure: () => Promise<Sample>) =>
        remeasureOn503(ctx, what, async () => {
          await file.fresh();
          return measure();
        });
      for (let i = 0; i < runs; i++) {
        ctx.log(`small files: ${formatSize(size)}, run ${i + 1}/${runs}`);
        node.push(...(await bareNode(ctx, 1)));
        send.push(await freshShimSend(ctx, file));
        curl.push(
          await fresh("curl", () => curlPut(ctx.meter, ctx.session, file.path, type, ctx.warn)),
        );
        nodeClient.push(
          await fresh("node", () => nodePut(ctx.meter, ctx.session, file.path, type, ctx.warn)),
        );
        curlOneRequest.push(
          await fresh("curl", () => curlSingleUpload(ctx.meter, ctx.session, file.path, type)),
        );
        nodeOneRequest.push(
          await fresh("node", () => nodeSingleUpload(ctx.meter, ctx.session, file.path, type)),
        );
      }
      const sendRow = startupRow(file, "random", "airlock send (one request)", send);
      const curlRow = startupRow(file, "random", "curl -T (presigned PUT)", curl);
      const nodeRow = startupRow(file, "random", "node -e 0", node);
      const nodeClientRow = startupRow(
        file,
        "random",
        "bare node:http script, same PUT",
        nodeClient,
      );
      const oneRequestRow = startupRow(
        file,
        "random",
        "curl, the shim's one request",
        curlOneRequest,
      );
      const nodeOneRequestRow = startupRow(
        file,
        "random",
        "bare node:http script, the shim's one request",
        nodeOneRequest,
      );
      rows.push(sendRow, curlRow, nodeRow, nodeClientRow, oneRequestRow, nodeOneRequestRow);
      // Issue 29's target: the shim against a bare node:http client making the same one
      // request, medians of the same run; the fastest runs beside it, for a loaded machine.
      for (const by of ["wallMs", "minMs"] as const) {
        const which = by === "wallMs" ? "medians" : "fastest runs, not the target";
        const limit = 1.1 * nodeOneRequestRow[by];
        checks.push({
          what: `send ${formatSize(size)} ≤ 1.1 × a bare node:http client making the same one request (${which})`,
          measuredMs: sendRow[by],
          limitMs: limit,
          met: sendRow[by] <= limit,
        });
      }
    } finally {
      await file.remove();
    }
  }
  return { rows, checks };
}

/**
 * A 1 GiB file sent, verified, then sent again unchanged, `runs` times; with a bare node start
 * and the dedup probe alone (one request on a fresh connection, timed in this process).
 */
export async function unchangedResend(ctx: Context, runs: number): Promise<StartupResults> {
  const file = await createFile(ctx.tmpDir, "random", 1024 * MiB);
  const env = { XDG_CACHE_HOME: join(ctx.tmpDir, "resend-cache") };
  try {
    ctx.log("unchanged re-send: first send of 1 GiB");
    const first = await shimSend(ctx.meter, ctx.session, file.path, { tmpDir: ctx.tmpDir, env });
    await ctx.settle(first.result, { keepRelay: true });
    const original = await describeFile(file.path, "application/octet-stream");
    const resend: Sample[] = [];
    const probe: Sample[] = [];
    const node = await bareNode(ctx, runs);
    for (let i = 0; i < runs; i++) {
      ctx.log(`unchanged re-send of 1 GiB, run ${i + 1}/${runs}`);
      const run = await shimSend(ctx.meter, ctx.session, file.path, { tmpDir: ctx.tmpDir, env });
      if (!run.result.deduped) throw new Error(`re-send was not a dedup hit: ${run.stdout}`);
      resend.push({ wallMs: run.wallMs, rssMiB: run.rssMiB, bytesSent: run.result.uploadedBytes });
      probe.push({ wallMs: await timedProbe(ctx.session, original), rssMiB: NaN, bytesSent: 0 });
    }
    const rows = [
      startupRow(file, "random, unchanged", "airlock send (re-send)", resend),
      startupRow(file, "random, unchanged", "dedup probe request", probe),
      startupRow(file, "random, unchanged", "node -e 0", node),
    ];
    const checks = (["wallMs", "minMs"] as const).map((by) => {
      const beyond = rows[0]![by] - rows[1]![by] - rows[2]![by];
      const which = by === "wallMs" ? "medians" : "fastest runs";
      return {
        what: `re-send of an unchanged 1 GiB − bare node − the request ≤ 50 ms (${which})`,
        measuredMs: beyond,
        limitMs: 50,
        met: beyond <= 50,
      };
    });
    return { rows, checks };
  } finally {
    await file.remove();
  }
}

/** One `POST /v1/uploads` probe on a connection of its own, as a fresh shim process makes it. */
async function timedProbe(session: Session, file: Awaited<ReturnType<typeof describeFile>>) {
  const body = Buffer.from(JSON.stringify(file));
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const request = http.request(
      `${session.url}/v1/uploads`,
      {
        method: "POST",
        agent: false,
        headers: {
          authorization: `Bearer ${session.token}`,
          "content-type": "application/json",
          "content-length": String(body.length),
        },
      },
      (response) => {
        response.resume();
        response.once("end", () =>
          response.statusCode === 201
            ? resolve()
            : reject(new Error(`probe: ${response.statusCode}`)),
        );
      },
    );
    request.once("error", reject);
    request.end(body);
  });
  return performance.now() - started;
}

/** The markdown section for these cases. */
export function renderStartup(results: StartupResults[]): string {
  const lines = [
    "## Start-up: small files and the unchanged re-send",
    "",
    "| case | size | tool | runs | median wall | fastest |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const row of results.flatMap((r) => r.rows)) {
    lines.push(
      `| ${row.label} | ${formatSize(row.size)} | ${row.tool} | ${row.runs} | ${formatMs(row.wallMs)} | ${formatMs(row.minMs)} |`,
    );
  }
  lines.push("", "| target | measured | limit | met |", "| --- | --- | --- | --- |");
  for (const check of results.flatMap((r) => r.checks)) {
    lines.push(
      `| ${check.what} | ${formatMs(check.measuredMs)} | ${formatMs(check.limitMs)} | ${check.met ? "yes" : "**no**"} |`,
    );
  }
  return `${lines.join("\n")}\n`;
}
