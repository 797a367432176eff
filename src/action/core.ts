import { randomBytes } from "node:crypto";
import * as actionsCore from "@actions/core";
import { printable } from "../workflow/printable.js";

// @actions/core as the action's steps use it: everything printed goes through printable()
// (workflow/printable.ts), so a message quoting a node, a command's output or a server cannot
// become a workflow command. The commands kubeforge issues itself (::add-mask::, ::group::,
// outputs and state through their files) are core's own; printInert is the one way to print
// untrusted text in bulk.

export * from "@actions/core";

type Message = string | Error;

const inert = (m: Message) => printable(m instanceof Error ? m.message : m);

export function info(message: string): void {
  actionsCore.info(printable(message));
}

export function warning(message: Message, properties?: actionsCore.AnnotationProperties): void {
  actionsCore.warning(inert(message), properties);
}

export function notice(message: Message, properties?: actionsCore.AnnotationProperties): void {
  actionsCore.notice(inert(message), properties);
}

export function error(message: Message, properties?: actionsCore.AnnotationProperties): void {
  actionsCore.error(inert(message), properties);
}

export function setFailed(message: Message): void {
  process.exitCode = actionsCore.ExitCode.Failure;
  error(message);
}

/**
 * Prints untrusted text in bulk (node logs): every line inert, and the whole between
 * ::stop-commands:: and the random token that resumes them, so that the runner ignores commands
 * there whatever they look like.
 */
export function printInert(lines: readonly string[]): void {
  const token = randomBytes(16).toString("hex");
  actionsCore.info(`::stop-commands::${token}`);
  for (const line of lines) actionsCore.info(printable(line));
  actionsCore.info(`::${token}::`);
}
