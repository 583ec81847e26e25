import { PlatformError } from "./platform";

/** The 24-hour customer service window is closed: free-form messages are refused. */
export const OUTSIDE_WINDOW_CODE = 131047;

/** Graph error codes that mean "slow down" whatever the HTTP status says. */
const RATE_LIMIT_CODES = new Set([4, 80007, 130429, 131056]);
/** Graph error codes a message sent with a stored media id gets when that id is no longer good. */
const MEDIA_REFUSED_CODES = new Set([100, 131053]);

export interface GraphError {
  error?: {
    message?: string;
    code?: number;
    error_data?: { details?: string };
  };
}

export function toPlatformError(
  response: Response,
  body: GraphError | undefined,
  text: string,
): PlatformError {
  const error = body?.error;
  const code = error?.code;
  if (code === OUTSIDE_WINDOW_CODE) {
    return new PlatformError(
      "whatsapp",
      response.status,
      "outside WhatsApp's 24-hour window since the person's last message: WhatsApp lets a " +
        "business send free-form messages only within 24 hours of it, so the person must " +
        `write to this number first (error ${OUTSIDE_WINDOW_CODE})`,
    );
  }
  const retryAfter = Number(response.headers.get("retry-after"));
  const status = code !== undefined && RATE_LIMIT_CODES.has(code) ? 429 : response.status;
  const details = error?.error_data?.details;
  const reason = error?.message
    ? `${error.message}${code !== undefined ? ` (${code})` : ""}${details ? `: ${details}` : ""}`
    : `HTTP ${response.status}: ${text.slice(0, 200)}`;
  return new PlatformError(
    "whatsapp",
    status,
    reason,
    Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
  );
}

export function isMediaRefusal(error: PlatformError): boolean {
  const code = /\((\d+)\)/.exec(error.reason)?.[1];
  return !error.retryable && code !== undefined && MEDIA_REFUSED_CODES.has(Number(code));
}
