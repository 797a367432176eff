// SIMULATION (test double). What every simulated kube-controller-manager controller gets.
import type { Authorizer } from "../authz.js";
import type { ObjectStore } from "../store.js";

export interface ControllerContext {
  store: ObjectStore;
  log: (line: string) => void;
  /** The apiserver's authorizer, for SubjectAccessReviews (csrapproving). */
  authorize: Authorizer;
}

/** Stops the controller. */
export type StopFn = () => void;
