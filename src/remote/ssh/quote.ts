// sshd hands the command string to the user's login shell (`$SHELL -c`), so argv must be
// quoted for a POSIX shell: every argument arrives as exactly one word, unexpanded.

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One shell word that stands for `arg` exactly. */
export function shellQuote(arg: string): string {
  if (SAFE.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** A command line that runs `argv` exactly, without any shell expansion. */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(" ");
}
