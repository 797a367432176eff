// How the GitHub runner finds workflow commands in a step's output, so tests can ask "would the
// runner act on this line?". From actions/runner: the output is read line by line
// (StreamReader.ReadLine: a line ends at "\n", "\r" or "\r\n"); ActionCommandManager tries
// ActionCommand.TryParseV2 (the line, trimmed of leading white space, starts with "::", a second
// "::" ends the command part, whose first word is a registered command), then TryParse, the
// legacy form ("##[" anywhere in the line, then "]"). Between ::stop-commands::<token> and
// ::<token>:: nothing but the resuming token is acted on.

/** The commands ActionCommandManager and its extensions register (v2 and legacy names alike). */
export const RUNNER_COMMANDS = new Set([
  "add-mask",
  "add-matcher",
  "remove-matcher",
  "echo",
  "internal-set-repo-path",
  "set-env",
  "set-output",
  "save-state",
  "add-path",
  "debug",
  "notice",
  "warning",
  "error",
  "group",
  "endgroup",
  "stop-commands",
]);

export interface RunnerCommand {
  /** The raw line as the runner read it. */
  line: string;
  command: string;
  /** "v2" (::name::) or "legacy" (##[name]). */
  form: "v2" | "legacy";
  /** The command's data, unescaped as the runner does (%0D, %0A, %25). */
  data: string;
}

/** .NET Char.IsWhiteSpace, which String.TrimStart trims. */
const LEADING_SPACE = /^[\s\u0085]+/;

function parseV2(line: string): RunnerCommand | undefined {
  const message = line.replace(LEADING_SPACE, "");
  if (!message.startsWith("::")) return undefined;
  const end = message.indexOf("::", 2);
  if (end < 0) return undefined;
  const info = message.slice(2, end);
  const space = info.indexOf(" ");
  const command = space < 0 ? info : info.slice(0, space);
  if (!RUNNER_COMMANDS.has(command)) return undefined;
  const data = message
    .slice(end + 2)
    .replace(/%0D/g, "\r")
    .replace(/%0A/g, "\n")
    .replace(/%25/g, "%");
  return { line, command, form: "v2", data };
}

function parseLegacy(line: string): RunnerCommand | undefined {
  const at = line.indexOf("##[");
  if (at < 0) return undefined;
  const rb = line.indexOf("]", at);
  if (rb < 0) return undefined;
  const info = line.slice(at + 3, rb);
  const space = info.indexOf(" ");
  const command = space < 0 ? info : info.slice(0, space);
  if (!RUNNER_COMMANDS.has(command)) return undefined;
  return { line, command, form: "legacy", data: line.slice(rb + 1) };
}

/**
 * Every command the runner would act on in `output`, in order: lines split as the runner
 * splits them, commands between stop-commands and its token left out (as the runner does).
 */
export function runnerCommands(output: string): RunnerCommand[] {
  const found: RunnerCommand[] = [];
  let resumeToken: string | undefined;
  for (const line of output.split(/\r\n|\r|\n/)) {
    if (resumeToken !== undefined) {
      if (line.replace(LEADING_SPACE, "") === `::${resumeToken}::`) resumeToken = undefined;
      continue;
    }
    const command = parseV2(line) ?? parseLegacy(line);
    if (!command) continue;
    if (command.command === "stop-commands") resumeToken = command.data;
    found.push(command);
  }
  return found;
}
