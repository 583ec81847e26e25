/**
 * The round-trip bench's markdown: what each operation and its baseline were measured to do on
 * the wire, then the wall time the link model (bench/link-model.ts) gives them on each profile,
 * then the issue's targets on the cross-continent profile.
 */
import type { CriticalPath } from "./critical-path";
import { formatMs } from "./format";
import { formatBytes, formatTrips, modelMs, PROFILES } from "./link-model";

/** One measured run of one tool doing one operation. */
export interface Observed {
  operation: string;
  tool: string;
  /** Spawn to exit on loopback, through the recording proxies. */
  wallMs: number;
  path: CriticalPath;
  /** The run this one is set against in the model's table (same operation), if any. */
  baseline?: string;
}

export interface Goal {
  operation: string;
  tool: string;
  baseline: string;
  /** Largest modelled ratio tool / baseline on the cross-continent profile. */
  limit: number;
}

/** The issue's targets, by the model, on the cross-continent profile. */
export const GOALS = (large: string): Goal[] => [
  {
    operation: "small send",
    tool: "airlock send",
    baseline: "curl, the same one request",
    limit: 1.1,
  },
  {
    operation: `send ${large}`,
    tool: "airlock send",
    baseline: "curl -T (presigned PUT)",
    limit: 0.5,
  },
  {
    operation: `get ${large}`,
    tool: "airlock get",
    baseline: "curl -o (presigned GET)",
    limit: 0.5,
  },
  {
    operation: `pull ${large}`,
    tool: "airlock pull",
    baseline: "curl -o (presigned GET)",
    limit: 0.5,
  },
];

const find = (runs: Observed[], operation: string, tool: string) =>
  runs.find((r) => r.operation === operation && r.tool === tool);

export function renderRoundTrips(
  runs: Observed[],
  goals: Goal[],
  meta: { date: string; loadStart: number; loadEnd: number; large: string },
): string {
  const lines = [
    `## Round trips and bytes, as measured (${meta.date}; 1-min load ${meta.loadStart.toFixed(2)} at the start, ${meta.loadEnd.toFixed(2)} at the end)`,
    "",
    "| operation | tool | round trips on the critical path | bytes per link | loopback wall |",
    "| --- | --- | --- | --- | --- |",
  ];
  for (const r of runs)
    lines.push(
      `| ${r.operation} | ${r.tool} | ${formatTrips(r.path)} | ${formatBytes(r.path)} | ${formatMs(r.wallMs)} |`,
    );
  lines.push(
    "",
    "## Modelled wall time per profile",
    "",
    `| operation | tool | ${PROFILES.map((p) => `${p.name} (× baseline)`).join(" | ")} |`,
    `| --- | --- | ${PROFILES.map(() => "---").join(" | ")} |`,
  );
  for (const r of runs) {
    const base = r.baseline ? find(runs, r.operation, r.baseline) : undefined;
    const cells = PROFILES.map((p) => {
      const ms = modelMs(r.path, p);
      return base ? `${formatMs(ms)} (${(ms / modelMs(base.path, p)).toFixed(2)}×)` : formatMs(ms);
    });
    lines.push(
      `| ${r.operation} | ${r.tool}${base ? ` vs ${base.tool}` : ""} | ${cells.join(" | ")} |`,
    );
  }
  const cross = PROFILES[1]!;
  lines.push(
    "",
    `## Targets by the model, ${cross.name}`,
    "",
    "| target | modelled | met |",
    "| --- | --- | --- |",
  );
  for (const goal of goals) {
    const tool = find(runs, goal.operation, goal.tool);
    const base = find(runs, goal.operation, goal.baseline);
    const name = `${goal.operation}: ${goal.tool} ≤ ${goal.limit}× ${goal.baseline}`;
    if (!tool || !base) {
      lines.push(`| ${name} | not measured | — |`);
      continue;
    }
    const [a, b] = [modelMs(tool.path, cross), modelMs(base.path, cross)];
    const ratio = a / b;
    lines.push(
      `| ${name} | ${ratio.toFixed(2)}× (${formatMs(a)} vs ${formatMs(b)}) | ${ratio <= goal.limit ? "yes" : "**no**"} |`,
    );
  }
  lines.push("", "## The critical paths", "");
  for (const r of runs) {
    lines.push(`${r.operation}, ${r.tool}:`, "", "```", ...r.path.chain, "```", "");
  }
  return `${lines.join("\n")}\n`;
}
