import { getIfExists } from "../../kube/idempotency.js";
import { COREDNS_NAME } from "../../manifests/addons/coredns.js";
import { KUBE_PROXY_NAME } from "../../manifests/addons/kube-proxy.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { addonPhase } from "../init/addons.js";
import { apiCallOptions } from "../init/clients.js";
import { runInitPhase } from "../join/init-view.js";
import type { UpgradeData } from "./data.js";
import { upgradeInitView } from "./init-view.js";
import { listUnupgradedControlPlanes } from "./versions.js";

// The addon phase of `upgrade apply` and `upgrade node` (cmd/phases/upgrade/addons.go, shared
// since v1.32): CoreDNS and kube-proxy are re-applied with init's own code, but only on a control
// plane and only once no kube-apiserver mirror Pod runs another image than this node's
// (UnupgradedControlPlaneInstances, v1.28+): with several control planes the addons change
// during the last one's `upgrade node`. An addon that is disabled in the ClusterConfiguration,
// or whose ConfigMap is gone, is not managed and stays as it is (kubeadm#2846; the v1.30
// apply/addons.go check kinder's upgrade-no-addon-config-maps workflow asserts).

interface Addon {
  phase: "coredns" | "kube-proxy";
  configMap: string;
  gone: string;
}

const ADDONS: Record<"coredns" | "kube-proxy", Addon> = {
  coredns: {
    phase: "coredns",
    configMap: COREDNS_NAME,
    gone: `the ConfigMaps "${COREDNS_NAME}" in the namespace "kube-system" were not found. Assuming that a DNS server was not deployed for this cluster. Note that once 'kubeadm upgrade apply' supports phases you will have to skip the DNS upgrade manually`,
  },
  "kube-proxy": {
    phase: "kube-proxy",
    configMap: KUBE_PROXY_NAME,
    gone: `the ConfigMap "${KUBE_PROXY_NAME}" in the namespace "kube-system" was not found. Assuming that kube-proxy was not deployed for this cluster. Note that once 'kubeadm upgrade apply' supports phases you will have to skip the kube-proxy upgrade manually`,
  },
};

/** shouldUpgradeAddons. */
async function everyControlPlaneUpgraded(data: UpgradeData, ctx: PhaseContext): Promise<boolean> {
  let behind: string[];
  try {
    behind = await listUnupgradedControlPlanes(
      await data.client(),
      data.cfg.init.nodeRegistration.name,
    );
  } catch (e) {
    throw new Error(
      `failed to determine whether all the control plane instances have been upgraded: ${(e as Error).message}`,
      { cause: e },
    );
  }
  if (behind.length === 0) return true;
  ctx.log.info(
    `[upgrade/addon] Skipping upgrade of addons because control plane instances [${behind.join(" ")}] have not been upgraded`,
  );
  return false;
}

async function runAddon(addon: Addon, data: UpgradeData, ctx: PhaseContext): Promise<void> {
  if (!data.isControlPlaneNode) {
    ctx.log.info(
      `[upgrade/addon] Skipping the addon/${addon.phase} phase. Not a control plane node.`,
    );
    return;
  }
  if (!(await everyControlPlaneUpgraded(data, ctx))) return;
  const view = upgradeInitView(data);
  const initPhase = addonPhase.phases!.find((p) => p.name === addon.phase)!;
  // dns.disabled / proxy.disabled: init's own switch (its runIf).
  if (initPhase.runIf && !initPhase.runIf(view)) return;
  const cm = await getIfExists(
    await data.client(),
    { apiVersion: "v1", kind: "ConfigMap", namespace: "kube-system", name: addon.configMap },
    apiCallOptions(view),
  );
  if (!cm) {
    ctx.log.warn(addon.gone);
    return;
  }
  await runInitPhase(initPhase, view, ctx);
}

export const upgradeAddonPhase: Phase<UpgradeData> = {
  name: "addon",
  short: "Upgrade the default kubeadm addons",
  phases: [
    {
      name: "coredns",
      short: "Upgrade the CoreDNS addon",
      run: (data, ctx) => runAddon(ADDONS.coredns, data, ctx),
    },
    {
      name: "kube-proxy",
      short: "Upgrade the kube-proxy addon",
      run: (data, ctx) => runAddon(ADDONS["kube-proxy"], data, ctx),
    },
  ],
};
