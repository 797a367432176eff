// Text kubeforge prints but did not write itself — a node's facts, a remote command's output, a
// file's contents, a server's error — may hold what whoever reads the log acts on:
//
// - The GitHub runner reads a step's output line by line (a line ends at "\n", "\r" or "\r\n")
//   and treats as a workflow command a line that starts with "::" once leading white space is
//   trimmed, and the legacy "##[" anywhere in a line (actions/runner ActionCommand.cs,
//   TryParseV2 and TryParse). A node could otherwise set outputs, add warnings or mask words.
// - A terminal acts on escape sequences (colours, cursor moves, a cleared screen).
//
// printable() keeps the text readable and makes it inert: control characters and Unicode line
// and direction marks become \xNN / \uNNNN escapes ("\r" becomes \r), and what would make a line
// a workflow command has its first character escaped the same way. New lines stay: every line is
// checked on its own. Applied to every line the reporters print, so no caller has to remember it.

// C0 controls but tab and new line, DEL, C1 controls (U+0085 NEL among them), the line and
// paragraph separators, and the bidirectional embedding, override and isolate marks.
const UNPRINTABLE =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

// What the runner trims before looking for "::" (.NET String.TrimStart: Char.IsWhiteSpace); \s
// covers it (U+0085, which \s lacks, is escaped above).
const COMMAND_START = /^(\s*):(?=:)/;
const LEGACY_COMMAND = /##\[/g;

function escapeChar(c: string): string {
  if (c === "\r") return "\\r";
  const code = c.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, "0")}`
    : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** One line (no "\n" in it) made inert. */
function printableLine(line: string): string {
  return line
    .replace(UNPRINTABLE, escapeChar)
    .replace(COMMAND_START, (_m, space: string) => `${space}\\x3a`)
    .replace(LEGACY_COMMAND, "##\\x5b");
}

/** `text` with every line inert for a terminal and for the GitHub runner (see above). */
export function printable(text: string): string {
  return text.split("\n").map(printableLine).join("\n");
}
