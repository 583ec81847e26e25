import { env } from "cloudflare:test";

/** Bytes a share link has counted so far (`links.bytes_served`), by its URL's link id. */
export async function bytesServed(url: string): Promise<number> {
  const linkId = url.split(".").at(-2)!;
  const row = await env.DB.prepare("SELECT bytes_served FROM links WHERE id = ?")
    .bind(linkId)
    .first<{ bytes_served: number }>();
  return row!.bytes_served;
}
