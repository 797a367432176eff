// The phase model (DESIGN.md "Phases are data"), after kubeadm's workflow package
// (cmd/kubeadm/app/cmd/phases/workflow/phase.go).

import type { Logger } from "../types/logger.js";

export type { Logger } from "../types/logger.js";

export interface PhaseContext {
  /** Slash path of the running phase: "certs/apiserver". */
  readonly path: string;
  readonly log: Logger;
}

export interface Phase<D> {
  /** kubeadm's phase name ("apiserver-kubelet-client"). */
  name: string;
  /** One line for help output. */
  short: string;
  /** Child phases, run in order after this phase's own `run`. */
  phases?: Phase<D>[];
  run?: (data: D, ctx: PhaseContext) => Promise<void>;
  /**
   * When false the phase (and its children) is skipped, as kubeadm's RunIf. May wait for data
   * computed on first use (a cluster workflow's plan).
   */
  runIf?: (data: D) => boolean | Promise<boolean>;
  /**
   * Slash paths of phases whose results this one reads: they run earlier, and skipping one
   * of them with --skip-phases while this one runs is an error naming both.
   */
  dependencies?: string[];
  /**
   * The log group the phase runs in, when no phase around it opened one. A top-level phase
   * opens a group named after itself unless this says otherwise: a function names it from the
   * data ("init cp-1"), false opens none (its lines go to the log around it). Consecutive
   * phases naming the same group share it.
   */
  group?: false | ((data: D) => string | Promise<string>);
  /** Not listed in help (kubeadm's hidden phases, e.g. join's check-etcd). */
  hidden?: boolean;
  /**
   * Registered so names, order and help are kubeadm's, but not implemented in this release:
   * the reason is shown instead of running it. A real run stops here with an error; a dry run
   * reports it and goes on.
   */
  pending?: string;
}
