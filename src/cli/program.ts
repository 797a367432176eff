import { Command, CommanderError } from "commander";
import { SUPPORTED_RANGE } from "../config/versions.js";
import { interruptOnSignals, interruption } from "../remote/interruption.js";
import { registerCerts, registerToken } from "./certs.js";
import { registerConfig } from "./config.js";
import { registerInit } from "./init.js";
import { registerJoin } from "./join.js";
import { registerLoadImages } from "./load-images.js";
import { registerReset } from "./reset.js";
import { registerUp } from "./up.js";
import { registerUpgrade } from "./upgrade.js";
import { KUBEFORGE_VERSION } from "../version.js";
import { printable } from "../workflow/printable.js";

// The kubeforge command line (DESIGN.md "Stable command-line surface"). Errors print as one
// message on stderr and exit 1 (128 + the signal's number when interrupted); KUBEFORGE_DEBUG=1
// adds the stack and the cause chain.

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (process.env.KUBEFORGE_DEBUG !== "1") return error.message;
  const chain: string[] = [error.stack ?? error.message];
  for (let c = error.cause; c instanceof Error; c = c.cause)
    chain.push(`caused by: ${c.stack ?? c.message}`);
  return chain.join("\n");
}

const program = new Command()
  .name("kubeforge")
  .description("kubeadm-compatible Kubernetes clusters for CI")
  .version(`kubeforge ${KUBEFORGE_VERSION} (Kubernetes ${SUPPORTED_RANGE})`)
  .showSuggestionAfterError()
  // `init` and `init phase` take the same flags: each command owns the options written after
  // it, or `init phase certs all --rootfs X` would hand --rootfs to `init` and lose it.
  .enablePositionalOptions()
  .exitOverride();

// The commands that run commands on hosts: Ctrl-C (or a CI job's cancellation) cancels those
// commands instead of leaving them to run on (remote/interruption.ts). Not the runner-side
// tunnel, which has its own way to stop.
const WORKFLOWS = new Set(["init", "join", "reset", "up", "down", "upgrade", "load-images"]);
program.hook("preAction", (_program, action) => {
  let top = action;
  while (top.parent && top.parent !== program) top = top.parent;
  if (WORKFLOWS.has(top.name())) interruptOnSignals((line) => process.stderr.write(`${line}\n`));
});

registerInit(program);
registerJoin(program);
registerReset(program);
registerUp(program);
registerLoadImages(program);
registerUpgrade(program);
registerConfig(program);
registerCerts(program);
registerToken(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // commander already printed its message (unknown option, --help, --version).
    process.exitCode = error.exitCode;
  } else {
    // Interrupted: said first, and 128 + the signal's number, as a shell reports a command a
    // signal ended.
    const by = interruption.aborted ? `${(interruption.reason as Error).message}: ` : "";
    // Inert (workflow/printable.ts): the message may quote a node or a server.
    process.stderr.write(`${printable(`${by}${describe(error)}`)}\n`);
    if (!interruption.aborted) process.exitCode = 1;
  }
}
