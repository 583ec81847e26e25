/**
 * A file name or path as one POSIX shell word for a command line the model runs: as it is when
 * plainly safe, else single-quoted; one starting with `-` gets `./` so no tool reads an option.
 */
export function shellWord(path: string): string {
  const safe = path.startsWith("-") ? `./${path}` : path;
  return /^[\w.,+@%=:/-]+$/.test(safe) ? safe : `'${safe.replaceAll("'", `'\\''`)}'`;
}
