import { posix } from "node:path";
import { parseGoDuration } from "../../config/duration.js";
import { joinHostPort } from "../../config/network.js";
import { MANIFESTS_DIR } from "../../config/paths.js";
import { parseYAMLDocuments } from "../../config/yaml.js";
import {
  controlPlaneComponentChecks,
  waitForControlPlaneComponents,
  waitForKubelet,
} from "../../kube/health.js";
import type { KubeObject } from "../../kube/types.js";
import type { Phase } from "../../workflow/phase.js";
import { waitControlPlaneClient } from "./clients.js";
import type { InitData } from "./data.js";

// kubeadm's cmd/phases/init/waitcontrolplane.go with WaitForAllControlPlaneComponents (GA in
// v1.33): the kubelet's healthz first, then every control-plane component's own health endpoint
// in parallel, each found from its static pod manifest.

const COMPONENTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

/** The kubelet's healthz URL from its configuration; undefined when healthzPort is 0 (kubeadm skips). */
export function kubeletHealthzURL(kubelet: Record<string, unknown>): string | undefined {
  const port = typeof kubelet.healthzPort === "number" ? kubelet.healthzPort : 10248;
  if (port === 0) return undefined;
  const address =
    typeof kubelet.healthzBindAddress === "string" && kubelet.healthzBindAddress !== ""
      ? kubelet.healthzBindAddress
      : "127.0.0.1";
  return `http://${joinHostPort(address, port)}/healthz`;
}

async function readStaticPod(data: InitData, component: string): Promise<KubeObject> {
  const path = posix.join(MANIFESTS_DIR, `${component}.yaml`);
  let text: string;
  try {
    text = (await data.host.readFile(path)).toString("utf8");
  } catch (e) {
    throw new Error(`cannot read the static pod manifest ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return parseYAMLDocuments(text, path)[0] as KubeObject;
}

/**
 * kubeadm's WaitForControlPlaneComponents for this node: each component's health endpoint, found
 * from its static Pod manifest, within timeouts.controlPlaneComponentHealthCheck. A joining
 * control plane's view carries the JoinConfiguration's timeouts (config/join-defaults.ts).
 */
export async function waitForStaticPodComponents(
  data: InitData,
  log: (line: string) => void,
): Promise<void> {
  const { cfg } = data;
  const pods = await Promise.all(COMPONENTS.map((c) => readStaticPod(data, c)));
  const checks = controlPlaneComponentChecks(pods);
  const client = await waitControlPlaneClient(data);
  await waitForControlPlaneComponents(data.api, client, checks, {
    timeoutMs: parseGoDuration(cfg.init.timeouts.controlPlaneComponentHealthCheck),
    log,
    criSocket: cfg.init.nodeRegistration.criSocket,
  });
}

export const waitControlPlanePhase: Phase<InitData> = {
  name: "wait-control-plane",
  short: "Wait for the control plane to start",
  run: async (data, ctx) => {
    const { cfg } = data;
    const log = (line: string) => ctx.log.info(line);
    log(
      `[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from directory "${MANIFESTS_DIR}"`,
    );
    const kubeletURL = kubeletHealthzURL(cfg.kubelet);
    if (kubeletURL) {
      await waitForKubelet(data.api, {
        url: kubeletURL,
        timeoutMs: parseGoDuration(cfg.init.timeouts.kubeletHealthCheck),
        log,
      });
    }
    await waitForStaticPodComponents(data, log);
  },
};
