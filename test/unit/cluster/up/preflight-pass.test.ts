import { describe, expect, it } from "vitest";
import { independentOfPreparation } from "../../../../src/cluster/up/node-workflows.js";

// Which of kubeadm's preflight checks `up` runs before node preparation: those whose answer
// preparation cannot change; the rest look at what it installs and run after it.

describe("independentOfPreparation", () => {
  it.each([
    "Port-6443",
    "Port-10250",
    "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
    "FileAvailable--etc-kubernetes-kubelet.conf",
    "DirAvailable--var-lib-etcd",
    "NumCPU",
    "Mem",
    "Hostname",
    "HTTPProxy",
    "HTTPProxyCIDR",
    "IsPrivilegedUser",
  ])("%s runs before preparation", (name) => {
    expect(independentOfPreparation(name)).toBe(true);
  });

  it.each([
    "CRI",
    "Swap",
    "KubeletVersion",
    "Service-Kubelet",
    "SystemVerification",
    "FileExisting-conntrack",
    "FileContent--proc-sys-net-ipv4-ip_forward",
    "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables",
    "ImagePull",
  ])("%s waits for the prepared host", (name) => {
    expect(independentOfPreparation(name)).toBe(false);
  });
});
