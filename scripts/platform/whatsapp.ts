import { hmacSha256Hex } from "../../src/auth/hmac";
import { callRelay, relayRefusal, SetupError, type Report, type Settings } from "./setup";

/**
 * WhatsApp: checks the access token against the phone number id (Graph API), Meta's verify
 * token handshake against the relay, and that the relay takes a webhook signed with the app
 * secret; then lists what to set and subscribe in the Meta app.
 */
export async function setUpWhatsApp(
  relay: string,
  settings: Settings,
  report: Report,
): Promise<void> {
  const token = settings.need("WHATSAPP_ACCESS_TOKEN", "a system user's permanent token");
  const phone = settings.need(
    "WHATSAPP_PHONE_NUMBER_ID",
    "WhatsApp → API Setup, the phone number id",
  );
  const verifyToken = settings.need("WHATSAPP_VERIFY_TOKEN", "any random string you choose");
  const appSecret = settings.need("WHATSAPP_APP_SECRET", "App settings → Basic → App secret");
  const apiBase = (settings.get("WHATSAPP_API_BASE") ?? "https://graph.facebook.com/v23.0").replace(
    /\/+$/,
    "",
  );

  let answer: Response;
  try {
    answer = await fetch(
      `${apiBase}/${encodeURIComponent(phone)}?fields=display_phone_number,verified_name`,
      {
        headers: { authorization: `Bearer ${token}` },
      },
    );
  } catch (error) {
    throw new SetupError(`could not reach the Graph API at ${apiBase}: ${String(error)}`);
  }
  const number = (await answer.json().catch(() => ({}))) as {
    display_phone_number?: string;
    verified_name?: string;
    error?: { message?: string; code?: number };
  };
  if (answer.status === 401 || number.error?.code === 190)
    throw new SetupError(
      `Meta refused WHATSAPP_ACCESS_TOKEN (${number.error?.message ?? answer.status})`,
    );
  if (!answer.ok)
    throw new SetupError(
      `Meta does not know WHATSAPP_PHONE_NUMBER_ID ${phone} for this token (${number.error?.message ?? answer.status})`,
    );
  report.done(
    `access token works: ${number.verified_name ?? "?"}, ${number.display_phone_number ?? "?"} (id ${phone})`,
  );

  const callback = `${relay}/webhooks/whatsapp`;
  const challenge = String(Math.floor(Math.random() * 1e9));
  const query = new URLSearchParams({
    "hub.mode": "subscribe",
    "hub.verify_token": verifyToken,
    "hub.challenge": challenge,
  });
  const handshake = await callRelay(`${callback}?${query}`);
  if (handshake.status === 403)
    throw new SetupError(
      "the relay refused the verify token: WHATSAPP_VERIFY_TOKEN differs from the relay's",
    );
  if (!handshake.ok)
    throw relayRefusal("WhatsApp", callback, handshake.status, "WHATSAPP_ACCESS_TOKEN");
  if ((await handshake.text()) !== challenge)
    throw new SetupError(`the relay did not echo the challenge at ${callback}`);
  report.done(`verify token round trip: the relay echoes Meta's challenge at ${callback}`);

  // An envelope with no messages: the relay checks the signature and stores nothing.
  const body = JSON.stringify({ object: "whatsapp_business_account", entry: [] });
  const signed = await callRelay(callback, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-hub-signature-256": `sha256=${await hmacSha256Hex(appSecret, body)}`,
    },
    body,
  });
  if (signed.status === 401)
    throw new SetupError(
      "the relay refused the signature: WHATSAPP_APP_SECRET differs from the relay's",
    );
  if (!signed.ok) throw relayRefusal("WhatsApp", callback, signed.status, "WHATSAPP_ACCESS_TOKEN");
  report.done("relay takes webhooks signed with the app secret");

  report.leave(
    `In the Meta app, WhatsApp → Configuration: Callback URL ${callback}, Verify token = WHATSAPP_VERIFY_TOKEN; Meta sends the same handshake.`,
  );
  report.leave("Subscribe to the webhook field: messages.");
  report.leave(
    'A person writes "airlock" to the number and gets their destination id (whatsapp:<number>); bind sessions to it.',
  );
}
