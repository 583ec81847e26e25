/** A relay answer as a test reads it: the status and the parsed JSON body (`{}` when empty). */
export interface ApiAnswer {
  status: number;
  body: ApiBody;
}

/** The fields tests look at; anything else is there too. */
export type ApiBody = Record<string, unknown> & {
  status?: string;
  error?: { code: string; message: string };
};

/** Calls the relay at `url` with a bearer token and an optional JSON body. */
export async function apiCall(
  url: string,
  token: string,
  method: string,
  path: string,
  json?: unknown,
): Promise<ApiAnswer> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(json === undefined ? {} : { "content-type": "application/json" }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as ApiBody) : {} };
}
