import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerTestsUnavailable } from "../../support/docker.js";
import { nodeReadiness } from "../up/support.js";
import { dockerRunner, type DockerRunner } from "./support.js";

// `kubeforge up` of one control plane and two workers, every node a container on a real Docker
// engine with real systemd, against the simulated control plane: the containers are created by
// up itself, node preparation runs for real in them (binaries from the local release server,
// containerd configured and restarted by systemd, sysctls in the container's network namespace,
// the kubelet unit and drop-in, the simulated kubelet started by systemd), then init, the joins,
// the built-in bridge network and the readiness wait; admin.conf on the runner names the first
// control plane's API server port published on the runner's loopback. `down` leaves no
// container, volume or network of the cluster behind.

const unavailable = dockerTestsUnavailable();
if (unavailable && process.env.CI)
  throw new Error(`the Docker tests cannot run under CI: ${unavailable}`);

const NAME = `dk${process.pid}`;
const TARGET = "v1.36.3";

interface UpgradeReport {
  from: string;
  to: string;
  result: string;
  nodes: { name: string; result: string; kubeletAfter?: string; steps: { startedAt: string }[] }[];
}

interface NodeList {
  items: {
    metadata: { name: string };
    spec: { unschedulable?: boolean };
    status: { nodeInfo: { kubeletVersion: string } };
  }[];
}
let r: DockerRunner;
let clusterPath: string;
let kubeconfig: string;
let upResult: { code: number; stdout: string; stderr: string };

beforeAll(async () => {
  if (unavailable) return;
  r = await dockerRunner();
  clusterPath = await r.writeClusterFile(
    r.clusterFile({ name: NAME, controlPlanes: 1, workers: 2 }),
  );
  kubeconfig = join(r.dir, "admin.conf");
  upResult = await r.cli(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
}, 60 * 60_000);

afterAll(async () => {
  if (!r) return;
  if ((await r.owned(NAME)).length > 0)
    await r.cli(["down", "-f", clusterPath, "--kubeconfig", kubeconfig]);
  await r.close();
}, 600_000);

describe.skipIf(unavailable)("kubeforge up on docker nodes: 1 control plane, 2 workers", () => {
  it("builds the cluster in containers and exports admin.conf through the published port", () => {
    expect(upResult.code, `${upResult.stderr}\n${upResult.stdout}`).toBe(0);
    expect(upResult.stdout.trim()).toBe(kubeconfig);
    expect(upResult.stderr).toMatch(/\[docker\] cp-1: container kubeforge-.*-cp-1/);
    expect(upResult.stderr).toMatch(
      /admin\.conf written to .* \(server https:\/\/127\.0\.0\.1:\d+, cp-1's API server port published on the runner\)/,
    );
  });

  it("has three Ready nodes, seen by kubectl through the runner's loopback", async () => {
    expect(await nodeReadiness(r, kubeconfig)).toEqual({
      "cp-1": "True",
      "w-1": "True",
      "w-2": "True",
    });
  });

  it("ran the kubelet under each container's systemd, from the unit node preparation wrote", async () => {
    for (const node of ["cp-1", "w-1", "w-2"]) {
      const id = `kubeforge-${NAME}-${node}`;
      const { containerExec } = await import("../../../src/remote/docker/exec.js");
      const show = await containerExec(r.engine, id, node, [
        "systemctl",
        "show",
        "kubelet",
        "-p",
        "ActiveState",
        "-p",
        "FragmentPath",
        "-p",
        "DropInPaths",
      ]);
      const text = show.stdout.toString();
      expect(text).toContain("ActiveState=active");
      expect(text).toContain("FragmentPath=/etc/systemd/system/kubelet.service");
      expect(text).toContain("DropInPaths=/etc/systemd/system/kubelet.service.d/10-kubeadm.conf");
    }
  });

  it("upgrades node by node to v1.36.3: systemd restarts each kubelet, which reports the target", async () => {
    const nodes = ["cp-1", "w-1", "w-2"];
    const kubeletPid = async (node: string) => {
      const { containerExec } = await import("../../../src/remote/docker/exec.js");
      const out = await containerExec(r.engine, `kubeforge-${NAME}-${node}`, node, [
        "systemctl",
        "show",
        "kubelet",
        "-p",
        "MainPID",
        "--value",
      ]);
      return out.stdout.toString().trim();
    };
    const before = await Promise.all(nodes.map(kubeletPid));
    const reportPath = join(r.dir, "report", "upgrade-report.json");
    const upgrade = await r.cli([
      "upgrade",
      "-f",
      clusterPath,
      "--to",
      TARGET,
      "--report",
      reportPath,
      "--drain-timeout",
      "2m",
      "--node-timeout",
      "5m",
    ]);
    expect(upgrade.code, `${upgrade.stderr}\n${upgrade.stdout}`).toBe(0);
    const report = JSON.parse(await readFile(reportPath, "utf8")) as UpgradeReport;
    expect(report).toMatchObject({ from: "v1.35.0", to: TARGET, result: "succeeded" });
    // kubeadm's documented order: the control plane first, then the workers one at a time.
    expect(report.nodes.map((n) => [n.name, n.result, n.kubeletAfter])).toEqual(
      nodes.map((n) => [n, "upgraded", TARGET]),
    );
    const started = (n: string) =>
      Date.parse(report.nodes.find((x) => x.name === n)!.steps[0]!.startedAt);
    expect(started("cp-1")).toBeLessThan(started("w-1"));
    expect(started("w-1")).toBeLessThan(started("w-2"));
    // A new kubelet process under each container's systemd, not the one `up` started.
    const after = await Promise.all(nodes.map(kubeletPid));
    for (const [i, pid] of after.entries()) {
      expect(pid).toMatch(/^[1-9]\d*$/);
      expect(pid, nodes[i]).not.toBe(before[i]);
    }
    const list = await r.kubectl<NodeList>(kubeconfig, ["get", "nodes"]);
    expect(
      list.items.map((n) => [
        n.metadata.name,
        n.status.nodeInfo.kubeletVersion,
        n.spec.unschedulable ?? false,
      ]),
    ).toEqual(nodes.map((n) => [n, TARGET, false]));
    expect(await nodeReadiness(r, kubeconfig)).toEqual({
      "cp-1": "True",
      "w-1": "True",
      "w-2": "True",
    });
  }, 1_200_000);

  it("down removes the cluster's containers, volumes and network", async () => {
    const before = await r.owned(NAME);
    expect(before.filter((o) => o.startsWith("container"))).toHaveLength(3);
    const down = await r.cli(["down", "-f", clusterPath, "--kubeconfig", kubeconfig]);
    expect(down.code, down.stderr).toBe(0);
    expect(await r.owned(NAME)).toEqual([]);
  });
});
