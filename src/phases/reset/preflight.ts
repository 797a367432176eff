import { type PreflightOutput, runChecks } from "../../node/preflight/checks.js";
import { isPrivilegedUserCheck } from "../../node/preflight/resource-checks.js";
import type { Phase } from "../../workflow/phase.js";
import type { ResetData } from "./data.js";

// kubeadm's reset preflight phase (cmd/phases/reset/preflight.go, v1.35): unless --force (or a
// dry run: askToConfirm says which), warn and ask for confirmation; then the root check alone (RunRootCheckOnly:
// IsPrivilegedUser, which --ignore-preflight-errors can lower to a warning).
// kubeforge runs in CI more than at a terminal: when nobody can answer the question, the reset
// is refused with a message that says to pass --force, instead of reading an empty answer.

/** kubeadm: util.InteractivelyConfirmAction("reset", "Are you sure you want to proceed?", ...). */
export const CONFIRM_PROMPT = "[reset] Are you sure you want to proceed? [y/N]: ";

/** kubeadm's error for any answer other than y/yes (cmd/util InteractivelyConfirmAction). */
export const NOT_CONFIRMED = "won't proceed; the user didn't answer (Y|y) in order to continue";

export const NO_TERMINAL_TO_CONFIRM =
  "kubeforge reset asks for confirmation before it reverts this host, and standard input is not a terminal: pass --force to reset without prompting";

const unprefixed = (line: string) => line.replace(/^\[preflight\] /, "").replace(/^\t/, "");

export const resetPreflightPhase: Phase<ResetData> = {
  name: "preflight",
  short: "Run reset pre-flight checks",
  run: async (data, ctx) => {
    if (data.askToConfirm) {
      ctx.log.warn(
        "[reset] WARNING: Changes made to this host by 'kubeforge init' or 'kubeforge join' will be reverted.",
      );
      if (!data.confirm) throw new Error(NO_TERMINAL_TO_CONFIRM);
      if (!(await data.confirm(CONFIRM_PROMPT))) throw new Error(NOT_CONFIRMED);
    }
    ctx.log.info("Running pre-flight checks");
    const out: PreflightOutput = {
      info: (l) => ctx.log.info(unprefixed(l)),
      warn: (l) => ctx.log.warn(unprefixed(l)),
    };
    await runChecks([isPrivilegedUserCheck(data.host)], data.ignorePreflightErrors, out);
  },
};
