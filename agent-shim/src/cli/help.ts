import { INBOX_DIR_VAR } from "../download/inbox-dir.js";

/** One usage line per command, quoted by usage errors. */
export const USAGE = {
  send: "airlock send <path|->... [--name <name>] [--to <platform:id>]... [--caption <text>] [--expires <duration>] [--max-downloads <n>] [--wait] [--json] [--media-tag]",
  get: "airlock get <fileId|shareUrl> [-o <path>] [--extract] [--max-bytes <n>] [--max-entries <n>]",
  pull: "airlock pull [--dir <dir>] [--wait] [--timeout <duration>] [--extract] [--max-bytes <n>] [--max-entries <n>] [--readonly] [--json]",
  request:
    "airlock request [--name <hint>] [--max-bytes <n>] [--expires <duration>] [--json] | airlock request --cancel <requestId>",
  link: "airlock link <fileId> [--expires <duration>] [--max-downloads <n>] [--json]",
  rm: "airlock rm <fileId>",
  ls: "airlock ls [--json]",
  toolSchema: "airlock tool-schema [--format openai|mcp]",
  mcp: "airlock mcp",
  global:
    "airlock <send|get|pull|request|link|rm|ls|tool-schema|mcp> ... | airlock <command> --help | airlock --help | airlock --version",
} as const;

/** The exit status `pull --wait --timeout` ends with when nothing arrived in time. */
export const PULL_TIMEOUT_EXIT = 3;

/** The commands that have a help page of their own. */
export type CommandName =
  "send" | "get" | "pull" | "request" | "link" | "rm" | "ls" | "tool-schema" | "mcp";

interface CommandPage {
  usage: string;
  /** What the command does, as the whole page's Commands section shows it. */
  about: string;
  /** Option lines, aligned at column 23, without -h/--help (every page adds it). */
  options: string;
  example: string;
}

const PAGES: Record<CommandName, CommandPage> = {
  send: {
    usage: USAGE.send,
    about: `upload files (hashed, gzipped where it pays, deduplicated) and print each share URL;
a directory is sent as one <dir>.tar.gz (symlinks kept as links, modes and mtimes
kept); with --to, also deliver each file to those chats. Stored bytes over 64 MiB
go up in parts, several at once; a large send that failed or was killed resumes
when run again, sending only the parts the store does not hold yet. - sends standard
input, named by --name or else by its sniffed type (stdin.txt, stdin.png, stdin.bin)`,
    options: `--name <name>        the name to send the file under, for - or one path only
--to <platform:id>   deliver to a chat: telegram:<chatId>, discord:<channelId>,
                     slack:<channelId> or whatsapp:<wa_id> (the person's number, digits
                     only); repeat for several (the session must allow each)
--caption <text>     caption for --to deliveries
--expires <duration> print a link minted to work this long (90s, 10m, 24h, 7d, 1h30m,
                     or seconds) instead of the default one; a link cannot outlive its
                     file
--max-downloads <n>  print a link that serves the file at most <n> times (counted in
                     bytes: n × its size), then refuses with 410
--wait               wait until the relay has verified each file (a large gzip or
                     multipart upload is "status":"pending" until then, and not yet a
                     dedup target); a file that fails the check fails the send
--json               one JSON object per file per line on stdout: fileId, name, size,
                     sha256, url, expiresAt (when the link stops working),
                     fileExpiresAt (when the file goes), status, deduped,
                     uploadedBytes, deliveries
--media-tag          print MEDIA:<url> instead of the bare URL (with --json: before
                     each JSON line), for gateways that route MEDIA: lines`,
    example: "airlock send report.pdf --to telegram:12345 --caption 'This week'",
  },
  get: {
    usage: USAGE.get,
    about: `download a file by id or share URL, verifying its SHA-256, and print the path
written`,
    options: `-o, --output <path>  where to write: a file, a directory, or - for stdout
                     (default: the file's name in the current directory, never
                     overwritten)
--extract            extract a .tar.gz into a new directory named after it (in
                     -o <dir>) instead of writing the archive; an archive with entries
                     that would escape that directory is refused whole, as is one with
                     an entry name that breaks the name rule (control, bidi or
                     invisible characters, \\, over 255 bytes: refused, not cleaned)
                     or pax or long-name headers over 1 MiB
--max-bytes <n>      with --extract: refuse an archive holding more than <n> bytes of
                     files (K, M, G, T: powers of 1024; default 10G); nothing of it is
                     kept
--max-entries <n>    with --extract: refuse an archive holding more than <n> entries
                     (files, directories, links; default 100000); nothing of it is
                     kept`,
    example: "airlock get https://airlock.example.com/d/<token> -o data.csv",
  },
  pull: {
    usage: USAGE.pull,
    about: `write the files people sent to this sandbox into a directory, verified, never
overwriting (report.pdf, then "report (1).pdf"), and print a line per file:
[User uploaded: <name> (<size>) at <path>], <path> being exactly where it was
written. Names are cleaned first (last path component, no control, bidi or
invisible characters, never empty or dots, at most 255 bytes) and [ ] in a name become
( ), so a line's only "]" is its last character. A file that cannot be pulled is
named on stderr (item id and name), stays in the inbox, and pull goes on with
the others, then exits 1. With nothing waiting, it says so on stderr and exits 0
at once, unless --wait`,
    options: `--dir <dir>          where to write (default: $${INBOX_DIR_VAR} when it is set,
                     else uploads/ in the current directory; created if missing)
--wait               when nothing is waiting, wait until something arrives (asking the
                     relay every second or so, then every few seconds), then pull it
--timeout <duration> with --wait: give up after this long (90s, 10m, 1h, 1h30m, or
                     seconds), with one line on stderr and exit status ${PULL_TIMEOUT_EXIT}
--extract            extract a .tar.gz into a new directory named after it (in the
                     directory above) instead of writing the archive; an archive with
                     entries that would escape that directory, or with a name that
                     breaks the name rule, is refused whole and stays in the inbox
--max-bytes <n>      with --extract: refuse an archive holding more than <n> bytes of
                     files (K, M, G, T: powers of 1024; default 10G)
--max-entries <n>    with --extract: refuse an archive holding more than <n> entries
                     (files, directories, links; default 100000)
--readonly           leave each file written read-only (mode 0444; with --extract,
                     every file in the extracted directory), e.g. configuration the
                     agent must not change
--json               one JSON object per file per line on stdout: itemId, fileId,
                     name, size, sha256, path, source`,
    example: "airlock pull --wait --timeout 10m",
  },
  request: {
    usage: USAGE.request,
    about: `ask a person for a file: print an upload link (…/u/<token>) to show them in any
chat or terminal. They open it in a browser, or run the command printed on stderr
(curl --fail-with-body -T <file> <link>/, which keeps the file's name); the file
arrives in this sandbox's inbox, for pull. The link takes one file`,
    options: `--name <hint>        the file name suggested to the person
--max-bytes <n>      the largest file the link takes (K, M, G, T: powers of 1024;
                     default: the relay's limit)
--expires <duration> how long the link takes an upload (90s, 10m, 24h, 7d; default:
                     the relay's link lifetime, never past the session's end)
--json               print { requestId, url, name, maxBytes, expiresAt } instead of
                     the URL
--cancel <requestId> take a link back: it stops working at once, and an upload under
                     way through it is given up (nothing of it is kept)`,
    example: "airlock request --name invoice.pdf --expires 1d",
  },
  link: {
    usage: USAGE.link,
    about: `print a fresh share link to one of this session's files, with an expiry and a
download limit of its own; the file's other links are not changed`,
    options: `--expires <duration> how long the link works (90s, 10m, 24h, 7d, 1h30m, or seconds;
                     default: the relay's link lifetime, cut at the file's expiry); a
                     link cannot outlive its file
--max-downloads <n>  serve the file at most <n> times through this link (counted in
                     bytes: n × its size), then refuse with 410
--json               print { fileId, url, expiresAt, maxDownloads } instead of the URL
                     (maxDownloads is null when unlimited)`,
    example: "airlock link fil_0123456789abcdefghijkl --expires 2h --max-downloads 1",
  },
  rm: {
    usage: USAGE.rm,
    about: `delete one of this session's files and print "deleted <fileId>": it leaves ls and
the session's quota at once, and every share link of it stops working (410)`,
    options: "",
    example: "airlock rm fil_0123456789abcdefghijkl",
  },
  ls: {
    usage: USAGE.ls,
    about: "list this session's files, newest first: id, size, the file's expiry, name",
    options: `--json               one file record per line on stdout, as the relay gives it`,
    example: "airlock ls --json",
  },
  "tool-schema": {
    usage: USAGE.toolSchema,
    about: `print the tools an agent host registers for its model, as JSON: send_file (the
host runs: airlock send --json [--to=<d>]... [--caption=<c>] -- <path>) and
receive_files (the host runs: airlock pull). Needs no relay`,
    options: `--format <format>    openai (function tools, the default) or mcp (a tools/list
                     result)`,
    example: "airlock tool-schema --format mcp > tools.json",
  },
  mcp: {
    usage: USAGE.mcp,
    about: `serve the tools of tool-schema --format mcp (send_file, receive_files,
request_file, share_link, list_files, remove_file) over MCP on stdin and stdout,
for an agent host to start (claude mcp add airlock -- airlock mcp); nothing but
protocol messages on stdout. receive_files writes as pull does, read-only when
AIRLOCK_READONLY=1. Runs until stdin closes`,
    options: "",
    example: "docker exec -i <sandbox> airlock mcp",
  },
};

const HELP_OPTION = "-h, --help           show this help";

const ENVIRONMENT = `Environment
  AIRLOCK_URL            the relay's base URL, e.g. https://airlock.example.com
  AIRLOCK_TOKEN          this sandbox's session token
  ${INBOX_DIR_VAR.padEnd(22)} where pull writes without --dir (default: ./uploads)
  AIRLOCK_READONLY       1: mcp's receive_files leaves each file read-only (pull --readonly)
  AIRLOCK_RETRIES        attempts per request before giving up (default 5)
  AIRLOCK_RETRY_BASE_MS  first retry delay in milliseconds, doubled each time (default 250)
  AIRLOCK_GZIP_LEVEL     gzip level 1-9 used when compressing pays (default 1)
  AIRLOCK_UPLOAD_CONCURRENCY
                         parts of a large upload in flight at once, 1-16
                         (default 4; unset, the Node shim opens them
                         once the first part shows they pay)
  AIRLOCK_MULTIPART_THRESHOLD
                         stored bytes above which a send goes in parts (default 64 MiB,
                         at least 8 MiB)
  AIRLOCK_DOWNLOAD_STREAMS
                         ranges get and pull fetch at once, 1-16
                         (default 4; unset, the Node shim opens them
                         once the first range shows they pay; 1: one
                         stream)
  AIRLOCK_PARALLEL_THRESHOLD
                         bytes from which they fetch in ranges (default 16 MiB)
  AIRLOCK_DOWNLOAD_CHUNK bytes per range (default: two per stream, 4-32 MiB;
                         at least 64 KiB)`;

const EXIT_STATUS = `Exit status: 0 success, 1 failure (a failed delivery or pulled file included: the
others still go through), 2 usage or configuration error, ${PULL_TIMEOUT_EXIT} pull --wait --timeout
ran out with nothing arriving.`;

function indent(text: string, by: string): string {
  return text
    .split("\n")
    .map((line) => (line === "" ? line : by + line))
    .join("\n");
}

function optionLines(page: CommandPage): string {
  return indent(page.options === "" ? HELP_OPTION : `${page.options}\n${HELP_OPTION}`, "  ");
}

/** `airlock <command> --help`: that command's usage line, what it does, its options, an example. */
export function commandHelp(name: CommandName): string {
  const page = PAGES[name];
  return `Usage
  ${page.usage}

${indent(page.about, "  ")}

Options
${optionLines(page)}

Example
  ${page.example}

Every command, the environment and exit statuses: airlock --help`;
}

/** Every command, in the order the whole page lists them. */
export const NAMES = Object.keys(PAGES) as CommandName[];

/** The whole of `airlock --help`: every command, its options, the environment. */
export const HELP = wholeHelp(NAMES);

/**
 * The whole help page over the given commands; `aside`, when given, is a line under the title
 * (the Python shim's page, rendered from this one by the shim build, says what it lacks).
 */
export function wholeHelp(names: readonly CommandName[], aside?: string): string {
  return `airlock: move files between this sandbox and people, through an Airlock relay
${aside === undefined ? "" : `${aside}\n`}
Usage
${names.map((name) => `  ${PAGES[name].usage}`).join("\n")}
  airlock <command> --help | airlock --help | airlock --version

Commands
${names.map((name) => commandSummary(name)).join("\n")}

${optionSections(names)}

Global options
  ${HELP_OPTION} (airlock <command> --help: that command's alone)
  -v, --version        show the version

${ENVIRONMENT}

${EXIT_STATUS}`;
}

/** Each command's options (those that have any), under its name. */
function optionSections(names: readonly CommandName[]): string {
  return names
    .filter((name) => PAGES[name].options !== "")
    .map((name) => `Options of ${name}\n${indent(PAGES[name].options, "  ")}`)
    .join("\n\n");
}

function commandSummary(name: CommandName): string {
  const [first, ...rest] = indent(PAGES[name].about, " ".repeat(10)).split("\n");
  const head = name.length < 8 ? `  ${name.padEnd(8)}${first!.trimStart()}` : `  ${name}\n${first}`;
  return [head, ...rest].join("\n");
}
