import { describe, expect, it } from "vitest";
import { kubeletClientUsesRBAC, releaseFor } from "../../../src/config/versions.js";
import { bootstrapTokenRBAC } from "../../../src/manifests/rbac.js";

// kubernetes/kubernetes#138957 moved kube-apiserver's kubelet-client rights from
// O=kubeadm:cluster-admins in apiserver-kubelet-client.crt to the ClusterRoleBinding
// kubeadm:apiserver-kubelet-client: on master (1.37) and, through cherry-picks, in v1.36.1,
// v1.35.5, v1.34.8 and v1.33.12 (cluster-api docs/book troubleshooting, kubernetes/kubeadm#3310).

const uses = (v: string) => kubeletClientUsesRBAC(v, releaseFor(v));

describe("which kubeadm versions bind the API server's kubelet client through RBAC", () => {
  it.each([
    ["v1.33.0", false],
    ["v1.33.11", false],
    ["v1.33.12", true],
    ["v1.33.13", true],
    ["v1.34.7", false],
    ["v1.34.8", true],
    ["v1.35.4", false],
    ["v1.35.5-rc.1", false],
    ["v1.35.5", true],
    ["v1.35.8", true],
    ["v1.36.0", false],
    ["v1.36.1", true],
    ["v1.37.0", true],
    ["v1.37.1", true],
  ])("%s: %s", (v, want) => {
    expect(uses(v)).toBe(want);
  });

  it("adds kubeadm:apiserver-kubelet-client to the bootstrap-token objects only then", () => {
    const names = (v: string) =>
      bootstrapTokenRBAC({ kubeletAPIAdminBinding: uses(v) }).map(
        (o) => `${o.kind}/${(o.metadata as { name: string }).name}`,
      );
    expect(names("v1.36.0")).not.toContain("ClusterRoleBinding/kubeadm:apiserver-kubelet-client");
    expect(names("v1.37.1").at(-1)).toBe("ClusterRoleBinding/kubeadm:apiserver-kubelet-client");
    expect(names("v1.37.1").slice(0, -1)).toEqual(names("v1.36.0"));
  });
});
