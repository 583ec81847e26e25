import { hmacSha256Hex } from "../../src/auth/hmac";
import { bytesToHex } from "../../src/encoding";

/** An Ed25519 key pair as Discord uses it: the public key in hex, and a signer. */
export async function discordKeys(): Promise<{
  publicKeyHex: string;
  sign(timestamp: string, body: string): Promise<string>;
}> {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const raw = (await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer;
  return {
    publicKeyHex: bytesToHex(raw),
    async sign(timestamp, body) {
      const signature = await crypto.subtle.sign(
        "Ed25519",
        pair.privateKey,
        new TextEncoder().encode(timestamp + body),
      );
      return bytesToHex(signature);
    },
  };
}

/** Slack's v0 signature over `v0:<timestamp>:<body>`. */
export async function slackSignature(
  secret: string,
  timestamp: string,
  body: string,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(`v0:${timestamp}:${body}`),
  );
  return `v0=${bytesToHex(mac)}`;
}

/** Meta's `X-Hub-Signature-256` (WhatsApp): HMAC-SHA256 of the raw body under the app secret. */
export async function hubSignature(appSecret: string, body: string): Promise<string> {
  return `sha256=${await hmacSha256Hex(appSecret, body)}`;
}

export function nowSeconds(offsetSeconds = 0): string {
  return String(Math.floor(Date.now() / 1000) + offsetSeconds);
}
