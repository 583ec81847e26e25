/**
 * Stored bytes up to which a file may go up in one request through the relay
 * (`POST /v1/single-uploads`): declared, stored, verified and registered at once. Below it a
 * send is dominated by round trips, not by the bytes passing through the Worker (measured by
 * `bench/small-files.ts`). Kept in a file of its own so the shim can share it.
 */
export const SINGLE_UPLOAD_MAX_BYTES = 1024 * 1024;
