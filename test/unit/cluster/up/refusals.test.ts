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
    ports: {
      connect: () => {
        connects++;
        return Promise.reject(new Error("must not connect"));
      },
      reset: () => Promise.resolve(),
      runnerAddresses: () => [],
      fetch: () => Promise.reject(new Error("must not fetch")),
      env: {},
    },
    reporter: new TerminalReporter({ write: () => {} }),
    dryRun: false,
    kubeconfigPath: "/nonexistent/admin.conf",
  }).then(
    () => "no error",
    (e: unknown) => (e as Error).message,
  );
  return { error, connects };
}

describe("up refuses before connecting", () => {
  it.each([
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
