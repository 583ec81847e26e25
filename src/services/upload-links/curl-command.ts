/**
 * The command that sends a file to an upload link from a terminal, as the upload page and
 * `airlock request` show it: curl adds the file's own name after the link's trailing slash (as
 * transfer.sh takes it), and `--fail-with-body` makes a refused upload exit non-zero while still
 * printing the relay's one-line reason.
 */
export function curlCommand(linkUrl: string, file = "<file>"): string {
  return `curl --fail-with-body -T ${file} ${linkUrl.replace(/\/+$/, "")}/`;
}
