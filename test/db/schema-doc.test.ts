import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import schemaDoc from "../../docs/schema.md?raw";

/** docs/schema.md's "Columns" list: table → its columns, in order. */
function documentedColumns(markdown: string): Record<string, string[]> {
  const section = markdown.split(/^## Columns$/m)[1]?.split(/^## |^Object keys/m)[0] ?? "";
  const tables: Record<string, string[]> = {};
  for (const line of section.split("\n")) {
    const match = /^- `([a-z_]+)`: (.*)$/.exec(line);
    if (match) tables[match[1]!] = [...match[2]!.matchAll(/`([a-z_0-9]+)`/g)].map((m) => m[1]!);
  }
  return tables;
}

describe("docs/schema.md", () => {
  it("lists every table and column the migrations make, in order", async () => {
    const { results } = await env.DB.prepare(
      `SELECT m.name AS tableName, p.name AS columnName FROM sqlite_master m
         JOIN pragma_table_info(m.name) p
        WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_cf_%'
          AND m.name != 'd1_migrations'
        ORDER BY m.name, p.cid`,
    ).all<{ tableName: string; columnName: string }>();
    const migrated: Record<string, string[]> = {};
    for (const { tableName, columnName } of results) (migrated[tableName] ??= []).push(columnName);
    expect(documentedColumns(schemaDoc)).toEqual(migrated);
  });

  it("describes every table in its overview", () => {
    const overview = schemaDoc.split(/^## Columns$/m)[0] ?? "";
    for (const table of Object.keys(documentedColumns(schemaDoc)))
      expect(overview, table).toContain(`| \`${table}\``);
  });
});
