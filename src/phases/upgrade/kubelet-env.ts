import type { Arg } from "../../config/types.js";
import { KUBELET_ENV_VARIABLE, goQuote } from "../../manifests/kubelet.js";
import { argumentsToCommand } from "../../manifests/static-pod.js";

// kubeadm-flags.env as kubeadm reads and rewrites it during an upgrade (phases/kubelet/flags.go
// ReadKubeletDynamicEnvFile, util.ArgumentsFromCommand, WriteKubeletArgsToFile): one line
// KUBELET_KUBEADM_ARGS="--a=b --c=d"; the value is split on white space and each "--name=value"
// becomes an argument; written back sorted, as kubeadm's BuildArgumentListFromMap.

/** ReadKubeletDynamicEnvFile + ArgumentsFromCommand. Throws naming the file when malformed. */
export function parseKubeletFlagsEnv(text: string, file: string): Arg[] {
  const content = text.trim();
  const prefix = `${KUBELET_ENV_VARIABLE}=`;
  if (!content.startsWith(prefix)) {
    throw new Error(`the file "${file}" does not contain the expected prefix "${prefix}"`);
  }
  const value = content.slice(prefix.length).replace(/^"+|"+$/g, "");
  return value
    .split(/\s+/)
    .filter((f) => f !== "")
    .map((flag) => {
      const m = /^--?([^=]+)(?:=(.*))?$/s.exec(flag);
      return m ? { name: m[1]!, value: m[2] ?? "" } : { name: flag, value: "" };
    });
}

/** WriteKubeletArgsToFile: the file's text for these arguments. */
export function renderKubeletFlagsArgs(args: readonly Arg[]): string {
  return `${KUBELET_ENV_VARIABLE}=${goQuote(argumentsToCommand(args, []).join(" "))}\n`;
}
