import { describe, expect, it } from "vitest";
import { up } from "../../../../src/cluster/up/index.js";
import { loadClusterSpec } from "../../../../src/config/cluster/load.js";
import { TerminalReporter } from "../../../../src/workflow/reporter.js";

// What the Cluster file alone decides is refused before any host is contacted.

const PIN = `SHA256:${"A".repeat(43)}`;

function cluster(extra: string, nodes: string[]): string {
  return [
    "apiVersion: kubeforge.dev/v1alpha1",
    "kind: Cluster",
    `ssh: {user: ubuntu, privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\\nAAAA\\n-----END OPENSSH PRIVATE KEY-----", hostKeyFingerprints: ["${PIN}"]}`,
    extra,
    "nodes:",
    ...nodes,
    "",
  ].join("\n");
}

async function refusal(text: string): Promise<{ error: string; connects: number }> {
  let connects = 0;
  const spec = loadClusterSpec(text, "cluster.yaml");
  const error = await up({
    spec,
    connect: () => {
      connects++;
      return Promise.reject(new Error("must not connect"));
    },
    reset: () => Promise.resolve(),
    reporter: new TerminalReporter({ write: () => {} }),
    env: {},
    dryRun: false,
    kubeconfigPath: "/nonexistent/admin.conf",
    stdout: () => {},
    runnerAddresses: () => [],
  }).then(
    () => "no error",
    (e: unknown) => (e as Error).message,
  );
  return { error, connects };
}

describe("up refuses before connecting", () => {
  it.each([
    {
      what: "several control planes without controlPlaneEndpoint",
      text: cluster("", [
        "- {name: cp-1, role: control-plane, host: ssh://10.0.0.1}",
        "- {name: cp-2, role: control-plane, host: ssh://10.0.0.2}",
      ]),
      error: /several control planes need a stable API endpoint: set controlPlaneEndpoint/,
    },
    {
      what: "a kubelet binary (node preparation is not there yet)",
      text: cluster("kubeletBinary: https://example.com/kubelet", [
        "- {name: cp-1, role: control-plane, host: ssh://10.0.0.1}",
      ]),
      error: /kubeletBinary is not supported by this version of kubeforge up yet/,
    },
    {
      what: "a phase to skip that neither init nor join has",
      text: cluster("skipPhases: [addon/kube-proxy, certs/etcd-nope]", [
        "- {name: cp-1, role: control-plane, host: ssh://10.0.0.1}",
      ]),
      error: /skipPhases: "certs\/etcd-nope" is neither an init nor a join phase/,
    },
  ])("$what", async ({ text, error }) => {
    const result = await refusal(text);
    expect(result.error).toMatch(error);
    expect(result.connects).toBe(0);
  });
});
