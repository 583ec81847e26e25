/**
 * The POSIX `sh` scripts the exec transport runs inside the sandbox, built for the tools the
 * sandbox was found to have. They take their data as positional arguments (paths, hashes) and
 * their bytes on stdin; file bytes never appear in a script or its arguments, except in the
 * base64 fallback for an exec API without stdin.
 *
 * Python and Node snippets hold no `'`, so that they can sit in single quotes.
 */

/** The programs the transport looks for in a sandbox. */
export const PROBED_TOOLS = ["sha256sum", "openssl", "python3", "node", "gzip", "base64"] as const;

export type Tool = (typeof PROBED_TOOLS)[number];

/** Prints the probed tools the sandbox has, one a line. */
export const PROBE_SCRIPT =
  `for t in ${PROBED_TOOLS.join(" ")}; do ` +
  `command -v "$t" >/dev/null 2>&1 && printf "%s\\n" "$t"; done; exit 0`;

/** `airlock_sha256` prints the SHA-256 of its stdin as its first word. Fastest tool first. */
const HASHERS: [Tool, string][] = [
  // OpenSSL uses the CPU's SHA instructions where coreutils' sha256sum may not: often 3× faster.
  ["openssl", "openssl dgst -sha256 -r"],
  ["sha256sum", "sha256sum"],
  [
    "python3",
    `python3 -c 'import hashlib,sys
h=hashlib.sha256()
for b in iter(lambda: sys.stdin.buffer.read(1<<20), b""): h.update(b)
print(h.hexdigest())'`,
  ],
  [
    "node",
    `node -e 'const h=require("crypto").createHash("sha256");` +
      `process.stdin.on("data",d=>h.update(d)).on("end",()=>console.log(h.digest("hex")))'`,
  ],
];

/** stdin (gzip) → stdout (the original bytes). */
const INFLATERS: [Tool, string][] = [
  ["gzip", "gzip -dc"],
  [
    "python3",
    `python3 -c 'import gzip,shutil,sys
shutil.copyfileobj(gzip.GzipFile(fileobj=sys.stdin.buffer),sys.stdout.buffer,1<<20)'`,
  ],
  ["node", `node -e 'process.stdin.pipe(require("zlib").createGunzip()).pipe(process.stdout)'`],
];

/** stdin → stdout (gzip, fast level). */
const DEFLATERS: [Tool, string][] = [
  ["gzip", "gzip -1 -c"],
  [
    "python3",
    `python3 -c 'import gzip,shutil,sys
g=gzip.GzipFile(fileobj=sys.stdout.buffer,mode="wb",compresslevel=1)
shutil.copyfileobj(sys.stdin.buffer,g,1<<20)
g.close()'`,
  ],
  [
    "node",
    `node -e 'process.stdin.pipe(require("zlib").createGzip({level:1})).pipe(process.stdout)'`,
  ],
];

/** stdin (base64) → stdout. */
const DECODERS: [Tool, string][] = [
  ["base64", "base64 -d"],
  ["openssl", "openssl base64 -d -A"],
  [
    "python3",
    `python3 -c 'import base64,sys
sys.stdout.buffer.write(base64.b64decode(sys.stdin.buffer.read()))'`,
  ],
  [
    "node",
    `node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(Buffer.from(s,"base64")))'`,
  ],
];

function pick(table: [Tool, string][], tools: ReadonlySet<Tool>): string | undefined {
  return table.find(([tool]) => tools.has(tool))?.[1];
}

/** The commands a sandbox can run, or undefined where it has no tool for the job. */
export interface SandboxCommands {
  /** A shell function body: SHA-256 of "$1". */
  sha256?: string;
  inflate?: string;
  deflate?: string;
  decodeBase64?: string;
}

export function commandsFor(tools: ReadonlySet<Tool>): SandboxCommands {
  const commands: SandboxCommands = {};
  const sha256 = pick(HASHERS, tools);
  const inflate = pick(INFLATERS, tools);
  const deflate = pick(DEFLATERS, tools);
  const decodeBase64 = pick(DECODERS, tools);
  if (sha256) commands.sha256 = sha256;
  if (inflate) commands.inflate = inflate;
  if (deflate) commands.deflate = deflate;
  if (decodeBase64) commands.decodeBase64 = decodeBase64;
  return commands;
}

/** Exit codes of the scripts, read by the SDK. */
export const EXIT = {
  noDirectory: 20,
  exists: 21,
  cannotCreate: 22,
  notFile: 23,
  mismatch: 24,
  cannotPlace: 25,
} as const;

/**
 * Shared by push and finish: `airlock_verify GOT SIZE` refuses (removing the temp file, by the
 * caller's trap) unless the received bytes hashed to $want (then they are SIZE bytes too; the
 * size is read only to say what went wrong);
 * `airlock_place TMP DEST REPLACE MODE` sets MODE and moves TMP to DEST: atomically, and
 * (unless REPLACE is 1) never over an existing file — a hard link fails when DEST exists;
 * where there are no hard links, DEST is created exclusively, then replaced by the rename.
 */
function placeFunctions(sha256: string): string {
  return `
airlock_sha256() { ${sha256}; }
airlock_fail() { code=$1; shift; printf "airlock: %s\\n" "$*" >&2; exit "$code"; }
airlock_verify() {
  got=\${1%% *}
  [ "$got" = "$want" ] && return 0
  [ -n "$got" ] || airlock_fail 1 "could not compute the SHA-256 of $tmp"
  have=$(($(wc -c < "$tmp")))
  [ "$have" = "$2" ] || airlock_fail ${EXIT.mismatch} "wrote $have of $2 bytes; nothing was kept"
  airlock_fail ${EXIT.mismatch} "SHA-256 mismatch: received $got, expected $want; nothing was kept"
}
airlock_place() {
  if [ -n "$4" ]; then chmod -- "$4" "$1" || airlock_fail ${EXIT.cannotPlace} "could not set the mode of $1"; fi
  [ -d "$2" ] && airlock_fail ${EXIT.exists} "$2 is a directory"
  if [ "$3" = 1 ]; then
    mv -f -- "$1" "$2" || airlock_fail ${EXIT.cannotPlace} "could not rename into $2"
  elif ln -- "$1" "$2" 2>/dev/null; then
    rm -f -- "$1"
  else
    { [ -e "$2" ] || [ -L "$2" ]; } && airlock_fail ${EXIT.exists} "$2 exists (not replaced)"
    ( set -C; : > "$2" ) 2>/dev/null || airlock_fail ${EXIT.exists} "$2 exists (not replaced)"
    mv -f -- "$1" "$2" || { rm -f -- "$2"; airlock_fail ${EXIT.cannotPlace} "could not rename into $2"; }
  fi
}`;
}

/**
 * Opens the temp file: `.NAME.RAND.airlock-part` in DEST's directory, created exclusively
 * (the name cut to 40 bytes, or characters in a shell that counts those, so that the temp
 * name stays short; by a loop of builtins, not a subshell). Sets $tmp, $dest, $want.
 */
const OPEN_TEMP = `
dest=$1 want=$2 replace=$3 mode=$4 rand=$5
case $dest in */*) dir=\${dest%/*}; dir=\${dir:-/} ;; *) dir=. ;; esac
base=\${dest##*/}
[ -d "$dir" ] || airlock_fail ${EXIT.noDirectory} "no such directory: $dir"
if [ "$replace" != 1 ]; then { [ -e "$dest" ] || [ -L "$dest" ]; } && airlock_fail ${EXIT.exists} "$dest exists (not replaced)"; fi
short=$base
while [ \${#short} -gt 40 ]; do short=\${short%?}; done
tmp=$dir/.$short.$rand.airlock-part`;

/**
 * SHA256 `-`: the bytes are followed on stdin by their SHA-256 (64 hex digits and a newline),
 * so that the host hashes them while they travel (the Python SDK's `push_bytes`).
 * `airlock_trailer SIZE` reads it from the temp file and cuts it off, or refuses when it is not
 * there or not well-formed.
 */
const TRAILER = `
airlock_trailer() {
  want=$(dd if="$tmp" bs=1 skip="$1" count=65 2>/dev/null)
  case $want in *[!0-9a-f]*) want= ;; esac
  if [ \${#want} != 64 ]; then
    have=$(($(wc -c < "$tmp")))
    [ "$have" -ge "$1" ] || airlock_fail ${EXIT.mismatch} "wrote $have of $1 bytes; nothing was kept"
    airlock_fail ${EXIT.mismatch} "the SHA-256 after the bytes did not arrive intact; nothing was kept"
  fi
  dd if=/dev/null of="$tmp" bs=1 seek="$1" 2>/dev/null || airlock_fail 1 "could not cut the SHA-256 from $tmp"
}`;

/**
 * `sh -c PUSH airlock-push DEST SHA256 REPLACE MODE RAND ENCODING SIZE`: stdin (gzip when
 * ENCODING is `gzip`) into a temp file beside DEST, checked there (the SHA-256 of the file on
 * disk: a failed inflate or write shows as a mismatch), then placed. The temp file never
 * outlives a failure. SHA256 `-`: see {@link TRAILER}. (Hashing the file once written costs
 * less CPU than hashing the stream through `tee`, whose small writes cost more than the second
 * read from the page cache.)
 */
export function pushScript(commands: SandboxCommands & { sha256: string }): string {
  const inflate = commands.inflate ?? "false";
  return `${placeFunctions(commands.sha256)}${TRAILER}
${OPEN_TEMP}
set -C
command : 2>/dev/null > "$tmp" || airlock_fail ${EXIT.cannotCreate} "could not create a temp file in $dir"
set +C
trap 'rm -f -- "$tmp"' EXIT
trap 'exit 129' HUP INT TERM PIPE
if [ "$6" = gzip ]; then ${inflate} > "$tmp"; else cat > "$tmp"; fi
[ "$want" = - ] && airlock_trailer "$7"
airlock_verify "$(airlock_sha256 < "$tmp")" "$7"
airlock_place "$tmp" "$dest" "$replace" "$mode"
trap - EXIT
printf "ok\\n"`;
}

/**
 * The base64 fallback, in three kinds of command: `open` (creates the temp file, prints its
 * path), `chunk TMP B64` (appends one decoded chunk), `finish TMP DEST SHA256 REPLACE MODE`
 * (checks and places it, or removes it).
 */
export function chunkedOpenScript(commands: SandboxCommands & { sha256: string }): string {
  return `${placeFunctions(commands.sha256)}
${OPEN_TEMP}
set -C
command : 2>/dev/null > "$tmp" || airlock_fail ${EXIT.cannotCreate} "could not create a temp file in $dir"
set +C
printf "%s\\n" "$tmp"`;
}

export function chunkScript(commands: SandboxCommands & { decodeBase64: string }): string {
  return `printf "%s" "$2" | ${commands.decodeBase64} >> "$1" || { rm -f -- "$1"; printf "airlock: could not append to %s\\n" "$1" >&2; exit ${EXIT.cannotCreate}; }`;
}

export function chunkedFinishScript(commands: SandboxCommands & { sha256: string }): string {
  return `${placeFunctions(commands.sha256)}
tmp=$1 dest=$2 want=$3
trap 'rm -f -- "$tmp"' EXIT
airlock_verify "$(airlock_sha256 < "$tmp")" "$6"
airlock_place "$tmp" "$dest" "$4" "$5"
trap - EXIT
printf "ok\\n"`;
}

/** The first line `collect` prints: `airlock-collect 2 <size> <identity|gzip>`. */
export const COLLECT_MAGIC = "airlock-collect 2";
/** The last line of `collect`'s stderr: `airlock-sha256 <sha256>`, then what else the hash tool prints. */
export const COLLECT_TRAILER = "airlock-sha256";

/**
 * `sh -c COLLECT airlock-collect SRC COMPRESS [raw]`: prints {@link COLLECT_MAGIC}'s line with the
 * file's size, then its bytes — gzipped when COMPRESS is `always`, or `auto` and its first
 * 64 KiB shrink by 10 % or more — and last, on stderr, {@link COLLECT_TRAILER}'s line with the
 * file's SHA-256, hashed by a second reader while the first sends (the bytes start at once;
 * a file changed meanwhile no longer matches what was sent, and is refused). With `raw` the
 * header line goes to stderr too, so that stdout is the file's bytes alone (for a local file
 * as stdout: COMPRESS is then `never`).
 */
export function collectScript(commands: SandboxCommands & { sha256: string }): string {
  const deflate = commands.deflate;
  const send = deflate ? `if [ "$enc" = gzip ]; then ${deflate}; else cat; fi` : "cat";
  return `
airlock_sha256() { ${commands.sha256}; }
airlock_fail() { code=$1; shift; printf "airlock: %s\\n" "$*" >&2; exit "$code"; }
airlock_send() { ${send}; }
src=$1
[ -f "$src" ] || airlock_fail ${EXIT.notFile} "not a regular file: $src"
[ -r "$src" ] || airlock_fail ${EXIT.notFile} "cannot read $src"
size=$(($(wc -c < "$src"))) || airlock_fail ${EXIT.notFile} "cannot read $src"
enc=identity
${
  deflate
    ? `[ "$2" = always ] && enc=gzip
if [ "$2" = auto ] && [ "$size" -gt 65536 ]; then
  sample=$(dd if="$src" bs=65536 count=1 2>/dev/null | ${deflate} | wc -c)
  [ -n "$sample" ] && [ $((sample * 10)) -le $((65536 * 9)) ] && enc=gzip
fi`
    : ""
}
if [ "$3" = raw ]; then printf "${COLLECT_MAGIC} %s %s\\n" "$size" "$enc" >&2
else printf "${COLLECT_MAGIC} %s %s\\n" "$size" "$enc"; fi
{ printf "${COLLECT_TRAILER} " >&2; airlock_sha256 < "$src" >&2; } &
airlock_send < "$src"
wait`;
}
