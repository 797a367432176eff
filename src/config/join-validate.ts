import type { JoinConfig } from "./types.js";
import { checkJoinConfiguration } from "./validate.js";

// Validation of the defaulted join configuration: kubeadm's ValidateJoinConfiguration
// (apis/kubeadm/validation/validation.go: ValidateDiscovery, ValidateDiscoveryBootstrapToken,
// ValidateDiscoveryKubeConfigPath, ValidateNodeRegistrationOptions, ValidateJoinControlPlane,
// the caCertPath rule) and cmd/join.go's VerifyAPIServerBindAddress for a control plane, through
// the rules validate.ts shares with `kubeforge config validate`. Among them: token discovery
// without a CA pin is refused unless unsafeSkipCAVerification is set explicitly, and token and
// file discovery exclude each other.

export interface JoinValidateOptions {
  /**
   * Whether the discovery file (when given as a path) exists where discovery will read it;
   * kubeadm refuses a missing one here. Leave undefined when nobody looked.
   */
  discoveryFileExists?: boolean;
}

/** Every problem in a defaulted join configuration, one sentence each; [] when it is usable. */
export function validateJoinConfig(cfg: JoinConfig, opts: JoinValidateOptions = {}): string[] {
  return checkJoinConfiguration(cfg.join, {
    defaulted: true,
    ...(opts.discoveryFileExists !== undefined
      ? { discoveryFileExists: opts.discoveryFileExists }
      : {}),
  });
}
