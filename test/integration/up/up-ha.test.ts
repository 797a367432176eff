import { spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import {
  clusterFile,
  diagnostics,
  eventually,
  nodeReadiness,
  runner,
  secretLines,
  type Runner,
} from "./support.js";
import { etcdctl } from "../../support/etcdctl.js";

// `kubeforge up` with three control planes and a worker over real SSH, behind the user's own
// load balancer (a real HAProxy on the runner's side of the testbed bridge, TCP mode with health
// checks, as a user's LB in front of the API servers would be). The three control planes form a
// real three-member etcd cluster; with one control plane stopped, the worker stays Ready and
// kubectl through the exported admin.conf still works.

let bed: SshTestbed;
let r: Runner;
let haproxy: ChildProcess | undefined;
let kubeconfig: string;
let endpoint: string;

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "cp-2", "cp-3", "w-1"], { ssh: true });
  r = await runner();
  endpoint = `${bed.gateway}:6443`;
  const cfg = join(r.dir, "haproxy.cfg");
  await writeFile(
    cfg,
    [
      "defaults",
      "  mode tcp",
      "  timeout connect 2s",
      "  timeout client 5m",
      "  timeout server 5m",
      "  retries 3",
      "  option redispatch",
      "frontend api",
      `  bind ${endpoint}`,
      "  default_backend apiservers",
      "backend apiservers",
      ...bed.hosts
        .filter((h) => h.name.startsWith("cp-"))
        .map((h) => `  server ${h.name} ${h.address}:6443 check inter 500ms fall 2 rise 1`),
      "",
    ].join("\n"),
  );
  haproxy = spawn("haproxy", ["-db", "-f", cfg], { stdio: "ignore" });
  kubeconfig = join(r.dir, "admin.conf");
}, 120_000);

afterAll(async () => {
  haproxy?.kill("SIGKILL");
  await bed?.stop();
}, 120_000);

describe("kubeforge up: 3 control planes + 1 worker behind the user's load balancer", () => {
  it("forms the cluster with three voting etcd members", async () => {
    const path = await r.writeClusterFile(
      clusterFile({
        name: "ha",
        controlPlanes: ["cp-1", "cp-2", "cp-3"].map((n) => bed.host(n)),
        workers: [bed.host("w-1")],
        controlPlaneEndpoint: endpoint,
      }),
    );
    const result = await r.kubeforge(["up", "-f", path, "--kubeconfig", kubeconfig]);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    // The certificate key (64 hex digits) never shows; the only such strings are CA pins.
    const output = result.stdout + result.stderr;
    const hex = [...output.matchAll(/(.{7})\b[0-9a-f]{64}\b/g)].map((m) => m[1]);
    expect(hex.every((before) => before === "sha256:")).toBe(true);
    for (const line of await secretLines(bed)) expect(output).not.toContain(line);
    // Control planes joined one at a time, in the Cluster file's order.
    const order = ["cp-2", "cp-3"].map((n) =>
      result.stderr.indexOf(`${n}: [preflight] Reading configuration from the cluster`),
    );
    expect(order[0]).toBeGreaterThan(-1);
    expect(order[1]).toBeGreaterThan(order[0]!);
    expect(await nodeReadiness(r, kubeconfig)).toEqual({
      "cp-1": "True",
      "cp-2": "True",
      "cp-3": "True",
      "w-1": "True",
    });
    const list = JSON.parse(await etcdctl(bed.host("cp-1"), ["member", "list", "-w", "json"])) as {
      members: { name: string; isLearner?: boolean }[];
    };
    expect(list.members.map((m) => [m.name, m.isLearner ?? false]).sort()).toEqual([
      ["cp-1", false],
      ["cp-2", false],
      ["cp-3", false],
    ]);
  }, 600_000);

  it("keeps the worker Ready and kubectl working with one control plane stopped", async () => {
    await bed.host("cp-1").node.stop({ keepFiles: true });
    // The stopped node is noticed (its kubelet no longer renews its Lease) while the worker,
    // whose kubelet reaches the API through the endpoint, stays Ready; kubectl goes through the
    // exported admin.conf and the load balancer to a surviving API server.
    const readiness = await eventually("cp-1 to be seen as not Ready", async () => {
      const nodes = await nodeReadiness(r, kubeconfig);
      if (nodes["cp-1"] === "True") throw new Error(JSON.stringify(nodes));
      return nodes;
    });
    expect(readiness).toMatchObject({ "cp-1": "Unknown", "w-1": "True" });
    const health = JSON.parse(
      await etcdctl(bed.host("cp-2"), ["endpoint", "health", "-w", "json"]),
    ) as { health: boolean }[];
    expect(health.every((h) => h.health)).toBe(true);
  }, 180_000);
});
