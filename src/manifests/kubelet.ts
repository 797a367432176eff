import { kubeletConfigurationType } from "../config/component-types.js";
import { featureGateEnabled } from "../config/feature-gates.js";
import { marshalGoStruct } from "../config/go-struct.js";
import { extraArgsKeepOrder } from "../config/patch-level.js";
import type { Release } from "../config/release.js";
import type { Arg, ComponentConfig, InitConfig, Taint } from "../config/types.js";
import { KUBELET_CONFIG_API } from "../config/types.js";
import { toYAML } from "../config/yaml.js";
import { argumentsToCommand, imageName, lastArgValue } from "./static-pod.js";

// The kubelet files kubelet-start writes. kubeadm: phases/kubelet/flags.go
// (kubeadm-flags.env), phases/kubelet/config.go (config.yaml, instance-config.yaml).

/** kubeadm: constants.KubeletRunDirectory. */
export const KUBELET_DIR = "/var/lib/kubelet";
export const KUBELET_CONFIG_FILE = "config.yaml";
export const KUBELET_INSTANCE_CONFIG_FILE = "instance-config.yaml";
export const KUBELET_FLAGS_ENV_FILE = "kubeadm-flags.env";
/** kubeadm: constants.KubeletEnvFileVariableName. */
export const KUBELET_ENV_VARIABLE = "KUBELET_KUBEADM_ARGS";
/** kubeadm: componentconfigs kubeletSystemdResolverConfig. */
export const SYSTEMD_RESOLV_CONF = "/run/systemd/resolve/resolv.conf";
export const NODE_LOCAL_CRI_SOCKET_GATE = "NodeLocalCRISocket";

export { featureGateEnabled };

/** NodeLocalCRISocket: the CRI socket lives in instance-config.yaml instead of a kubelet flag. */
export function nodeLocalCRISocket(cfg: InitConfig, release: Release): boolean {
  return featureGateEnabled(cfg.cluster.featureGates, release, NODE_LOCAL_CRI_SOCKET_GATE);
}

/** `<imageRepository>/pause:<version>` (kubeadm: images.GetPauseImage). */
export function pauseImage(imageRepository: string, release: Release): string {
  return imageName(imageRepository, "pause", release.pauseVersion);
}

/** The OS hostname as the kubelet sees it (k8s.io/component-helpers node/util GetHostname). */
export function kubeletHostname(raw: string): string {
  const name = raw.trim().toLowerCase();
  if (name === "") throw new Error("the node's hostname is empty");
  return name;
}

/** v1.Taint.ToString: "key=value:Effect", "key:Effect", "key=value:" or "key". */
export function taintToString(taint: Taint): string {
  const value = taint.value ?? "";
  if (!taint.effect) return value === "" ? taint.key : `${taint.key}=${value}:`;
  return value === "" ? `${taint.key}:${taint.effect}` : `${taint.key}=${value}:${taint.effect}`;
}

export interface KubeletFlagsInput {
  nodeRegistration: {
    name: string;
    criSocket: string;
    taints: readonly Taint[];
    kubeletExtraArgs: readonly Arg[];
  };
  /** The OS hostname, already through kubeletHostname(). */
  hostname: string;
  /** The pause image, when the release passes --pod-infra-container-image. */
  pauseImage: string | undefined;
  nodeLocalCRISocket: boolean;
  /** Worker join registers its taints with the kubelet flag; init marks them through the API. */
  registerTaintsUsingFlags: boolean;
  /** kubeletExtraArgs follow the sorted flags in the user's order (extraArgsKeepOrder). */
  keepExtraArgsOrder: boolean;
}

/** The kubelet flags kubeadm writes, `--name=value`, sorted (kubeadm: flags.go buildKubeletArgs). */
export function kubeletFlagArgs(input: KubeletFlagsInput): string[] {
  const reg = input.nodeRegistration;
  const args: Arg[] = [];
  if (!input.nodeLocalCRISocket && reg.criSocket !== "") {
    args.push({ name: "container-runtime-endpoint", value: reg.criSocket });
  }
  // Passing the pause image also keeps the kubelet from garbage-collecting it.
  if (input.pauseImage) args.push({ name: "pod-infra-container-image", value: input.pauseImage });
  if (input.registerTaintsUsingFlags && reg.taints.length > 0) {
    args.push({ name: "register-with-taints", value: reg.taints.map(taintToString).join(",") });
  }
  // kubeadm: GetNodeNameAndHostname — the node name is the hostname unless overridden.
  const nodeName =
    lastArgValue(reg.kubeletExtraArgs, "hostname-override") ?? (reg.name || input.hostname);
  if (nodeName !== input.hostname) args.push({ name: "hostname-override", value: nodeName });
  return argumentsToCommand(args, reg.kubeletExtraArgs, input.keepExtraArgsOrder);
}

/** The whole kubeadm-flags.env: one line, Go %q-quoted. */
export function renderKubeletFlagsEnv(input: KubeletFlagsInput): string {
  return `${KUBELET_ENV_VARIABLE}=${goQuote(kubeletFlagArgs(input).join(" "))}\n`;
}

/** kubeadm-flags.env for `kubeadm init` (taints are applied later, by mark-control-plane). */
export function initKubeletFlagsEnv(cfg: InitConfig, release: Release, hostname: string): string {
  return renderKubeletFlagsEnv({
    nodeRegistration: cfg.init.nodeRegistration,
    hostname: kubeletHostname(hostname),
    pauseImage: release.behaviour.podInfraContainerImageFlag
      ? pauseImage(cfg.cluster.imageRepository, release)
      : undefined,
    nodeLocalCRISocket: nodeLocalCRISocket(cfg, release),
    registerTaintsUsingFlags: false,
    keepExtraArgsOrder: extraArgsKeepOrder(cfg.cluster.kubernetesVersion, release),
  });
}

/**
 * instance-config.yaml: only the CRI endpoint, without apiVersion or kind
 * (kubeadm: config.go WriteInstanceConfigToDisk writes `containerRuntimeEndpoint: %q`).
 */
export function renderInstanceConfig(criSocket: string): string {
  return `containerRuntimeEndpoint: ${goQuote(criSocket)}\n`;
}

/**
 * kubeadm's kubelet Mutate step: with systemd-resolved active, the kubelet must read the real
 * upstream servers, not the 127.0.0.53 stub. A user's own resolvConf stays (kubeadm warns).
 */
export function withResolvConf(
  config: ComponentConfig,
  systemdResolvedActive: boolean,
  warn?: (message: string) => void,
): ComponentConfig {
  if (!systemdResolvedActive) return config;
  const current = config["resolvConf"];
  if (current === undefined || current === null) {
    return { ...config, resolvConf: SYSTEMD_RESOLV_CONF };
  }
  if (current !== SYSTEMD_RESOLV_CONF) {
    warn?.(
      `The recommended value for "resolvConf" in "KubeletConfiguration" is: ${SYSTEMD_RESOLV_CONF}; the provided value is: ${typeof current === "string" ? current : JSON.stringify(current)}`,
    );
  }
  return config;
}

/**
 * The KubeletConfiguration as kubeadm marshals it for config.yaml and the kubelet-config
 * ConfigMap (componentconfigs handler.Marshal): the whole v1beta1 struct, so unset fields
 * without omitempty appear as Go zero values (`syncFrequency: 0s`, `memorySwap: {}`,
 * `containerRuntimeEndpoint: ""`, the `logging` block) and fields the type lacks are dropped.
 */
export function marshalKubeletConfiguration(
  config: Readonly<ComponentConfig>,
  release: Pick<Release, "minor">,
): ComponentConfig {
  return {
    ...marshalGoStruct(kubeletConfigurationType(release), config),
    apiVersion: KUBELET_CONFIG_API,
    kind: "KubeletConfiguration",
  };
}

/** /var/lib/kubelet/config.yaml text of an already marshalled configuration. */
export function renderKubeletConfig(config: Readonly<Record<string, unknown>>): string {
  return toYAML(config);
}

/**
 * Go's %q (strconv.Quote): double quotes; backslash, quote and control characters escaped;
 * printable Unicode kept as is.
 */
export function goQuote(text: string): string {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case "\\":
        out += "\\\\";
        continue;
      case "\x07":
        out += "\\a";
        continue;
      case "\b":
        out += "\\b";
        continue;
      case "\f":
        out += "\\f";
        continue;
      case "\n":
        out += "\\n";
        continue;
      case "\r":
        out += "\\r";
        continue;
      case "\t":
        out += "\\t";
        continue;
      case "\v":
        out += "\\v";
        continue;
    }
    if (isGoPrintable(ch, cp)) out += ch;
    else if (cp < 0x80) out += `\\x${hex(cp, 2)}`;
    else if (cp >= 0xd800 && cp <= 0xdfff)
      out += "\\ufffd"; // a lone surrogate is not UTF-8
    else if (cp < 0x10000) out += `\\u${hex(cp, 4)}`;
    else out += `\\U${hex(cp, 8)}`;
  }
  return `${out}"`;
}

/** unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
function isGoPrintable(ch: string, cp: number): boolean {
  if (cp === 0x20) return true;
  return /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(ch);
}

function hex(value: number, width: number): string {
  return value.toString(16).padStart(width, "0");
}
