/** Where a test's S3 store is and how to sign for it. */
export interface S3Coordinates {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * The relay's `S3_*` vars for a store. `endpoint` replaces the store's own when the relay
 * must reach it through a proxy (which keeps the Host the relay signed for).
 */
export function s3Vars(s3: S3Coordinates, endpoint = s3.endpoint): Record<string, string> {
  return {
    S3_ENDPOINT: endpoint,
    S3_REGION: s3.region,
    S3_BUCKET: s3.bucket,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
}
