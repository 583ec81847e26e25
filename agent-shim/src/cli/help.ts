import { DEFAULT_PULL_DIR } from "./config.js";

/** One usage line per command, quoted by usage errors. */
export const USAGE = {
  send: "airlock send <path>... [--to <platform:id>]... [--caption <text>] [--wait] [--json] [--media-tag]",
  get: "airlock get <fileId|shareUrl> [-o <path>] [--extract] [--max-bytes <n>]",
  pull: "airlock pull [--dir <dir>] [--json] [--extract] [--max-bytes <n>] [--readonly]",
  ls: "airlock ls [--json]",
  toolSchema: "airlock tool-schema [--format openai|mcp]",
  global: "airlock <send|get|pull|ls|tool-schema> ... | airlock --help | airlock --version",
} as const;

/** The whole of `airlock --help`. */
export const HELP = `airlock: move files between this sandbox and people, through an Airlock relay

Usage
  ${USAGE.send}
  ${USAGE.get}
  ${USAGE.pull}
  ${USAGE.ls}
  ${USAGE.toolSchema}
  airlock --help | --version

Commands
  send    upload files (hashed, gzipped where it pays, deduplicated) and print each share URL;
          a directory is sent as one <dir>.tar.gz (symlinks kept as links, modes and mtimes
          kept); with --to, also deliver each file to those chats. Stored bytes over 64 MiB
          go up in parts, several at once; a large send that failed or was killed resumes
          when run again, sending only the parts the store does not hold yet
  get     download a file by id or share URL, verifying its SHA-256, and print the path written
  pull    write the files people sent to this sandbox into a directory, verified, never
          overwriting (report.pdf, then "report (1).pdf"), and print a line per file:
          [User uploaded: <name> (<size>) at <path>], <path> being exactly where it was
          written. Names are cleaned first (last path component, no control or bidi
          characters, never empty or dots, at most 255 bytes) and [ ] in a name become
          ( ), so a line's only "]" is its last character. A file that cannot be pulled is
          named on stderr (item id and name), stays in the inbox, and pull goes on with
          the others, then exits 1
  ls      list this session's files
  tool-schema
          print the tools an agent host registers for its model, as JSON: send_file (the
          host runs: airlock send --json [--to=<d>]... [--caption=<c>] -- <path>) and
          receive_files (the host runs: airlock pull)

Options
  --to <platform:id>   deliver to a chat: telegram:<chatId>, discord:<channelId>,
                       slack:<channelId> or whatsapp:<wa_id> (the person's number, digits
                       only); repeat for several (the session must allow each)
  --caption <text>     caption for --to deliveries
  --json               one JSON object per file per line on stdout
  --wait               send: wait until the relay has verified each file (a large gzip or
                       multipart upload is "status":"pending" until then, and not yet a
                       dedup target); a file that fails the check fails the send
  --media-tag          send prints MEDIA:<url> instead of the bare URL (with --json: before
                       each JSON line), for gateways that route MEDIA: lines
  --format <format>    tool-schema's format: openai (function tools, the default) or mcp
                       (a tools/list result)
  -o, --output <path>  where get writes: a file, a directory, or - for stdout
                       (default: the file's name in the current directory, never overwritten)
  --extract            get, pull: extract a .tar.gz into a new directory named after it
                       (in -o <dir> or --dir) instead of writing the archive; an archive
                       with entries that would escape that directory is refused whole,
                       as is one with an entry name that breaks the name rule (control or
                       bidi characters, \\, over 255 bytes: refused, not cleaned) or pax
                       or long-name headers over 1 MiB
  --max-bytes <n>      get, pull --extract: refuse an archive holding more than <n> bytes
                       of files (K, M, G, T: powers of 1024; default 10G); nothing of it
                       is kept
  --dir <dir>          where pull writes (default: ${DEFAULT_PULL_DIR}, created if missing)
  --readonly           pull: leave each file written read-only (mode 0444; with --extract,
                       every file in the extracted directory), e.g. configuration the
                       agent must not change
  -h, --help           show this help
  -v, --version        show the version

Environment
  AIRLOCK_URL            the relay's base URL, e.g. https://airlock.example.com
  AIRLOCK_TOKEN          this sandbox's session token
  AIRLOCK_RETRIES        attempts per request before giving up (default 5)
  AIRLOCK_RETRY_BASE_MS  first retry delay in milliseconds, doubled each time (default 250)
  AIRLOCK_GZIP_LEVEL     gzip level 1-9 used when compressing pays (default 1)
  AIRLOCK_UPLOAD_CONCURRENCY
                         parts of a large upload in flight at once, 1-16 (default 4)

Exit status: 0 success, 1 failure (a failed delivery or pulled file included: the
others still go through), 2 usage or configuration error.`;
