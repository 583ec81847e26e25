/**
 * The verify queue's message: a completed upload's file, to check if it is still pending
 * and then to settle (one stored copy per content, an archive listed once); without
 * `uploadId`, a file the relay stored itself (an attachment, a seed), to list if an archive.
 */
export interface VerifyJob {
  fileId: string;
  uploadId?: string;
  /**
   * The follow-up of a settle that moved the file off its upload's own object (see
   * `settleOnContentKey`): only that object goes, if nothing uses it, once any store URL
   * naming it has lapsed.
   */
  dropUploadObject?: true;
}

/** Where verification jobs go: the `VERIFY_QUEUE` Cloudflare Queue. */
export interface VerifyQueue {
  send(job: VerifyJob, options?: { delaySeconds?: number }): Promise<unknown>;
}
