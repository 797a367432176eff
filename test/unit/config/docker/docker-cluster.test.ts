import { describe, expect, it } from "vitest";
import { loadClusterSpec } from "../../../../src/config/cluster/load.js";
import { ConfigError } from "../../../../src/config/load.js";
import {
  dockerNodes,
  parseNodeCounts,
  MAX_CONTROL_PLANES,
} from "../../../../src/config/docker/expand.js";
import {
  candidateSubnets,
  containerName,
  isImageReference,
  nodeAddresses,
} from "../../../../src/config/docker/network-plan.js";

const HEAD = "apiVersion: kubeforge.dev/v1alpha1\nkind: Cluster\nname: ci\n";

function problemsOf(text: string): string[] {
  try {
    loadClusterSpec(text, "cluster.yaml", {});
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe("docker nodes in the Cluster file", () => {
  it("takes host: docker with the docker section defaulted", () => {
    const spec = loadClusterSpec(
      `${HEAD}nodes:\n- {name: cp-1, role: control-plane, host: docker}\n- {name: w-1, role: worker, host: docker}\n`,
      "cluster.yaml",
      {},
    );
    expect(spec.nodes.map((n) => n.host)).toEqual(["docker", "docker"]);
    expect(spec.docker).toEqual({ baseImage: "debian:bookworm-slim" });
  });

  it("keeps a user's image and subnet", () => {
    const spec = loadClusterSpec(
      `${HEAD}docker: {image: "ghcr.io/acme/node:1.2", subnet: 172.31.9.0/24}\nnodes:\n- {name: cp-1, role: control-plane, host: docker}\n`,
      "cluster.yaml",
      {},
    );
    expect(spec.docker).toEqual({
      image: "ghcr.io/acme/node:1.2",
      baseImage: "debian:bookworm-slim",
      subnet: "172.31.9.0/24",
    });
  });

  it("leaves the section out of a Cluster without docker nodes", () => {
    const spec = loadClusterSpec(HEAD, "cluster.yaml", {});
    expect(spec.docker).toBeUndefined();
  });

  it.each([
    [
      "nodes:\n- {name: cp-1, role: control-plane, host: docker, ssh: {user: root}}\n",
      "nodes[0].ssh: the node is a Docker container",
    ],
    [
      "nodes:\n- {name: cp-1, role: control-plane, host: docker, address: 10.0.0.1}\n",
      "nodes[0].address: a docker node's address comes from the cluster's Docker network",
    ],
    [
      "docker: {image: Not An Image}\nnodes:\n- {name: cp-1, role: control-plane, host: docker}\n",
      'docker.image: "Not An Image" is not an image reference',
    ],
    [
      "docker: {subnet: 172.30.5.7/24}\nnodes:\n- {name: cp-1, role: control-plane, host: docker}\n",
      'docker.subnet: "172.30.5.7/24" is not an IPv4 network',
    ],
    [
      "docker: {subnet: 172.30.5.0/29}\nnodes:\n- {name: cp-1, role: control-plane, host: docker}\n",
      "the prefix must be /8 to /28",
    ],
    [
      "docker: {subnet: 172.30.5.0/28}\nnodes:\n- {name: cp-1, role: control-plane, host: docker}\n- {name: w-1, role: worker, host: docker}\n- {name: w-2, role: worker, host: docker}\n- {name: w-3, role: worker, host: docker}\n- {name: w-4, role: worker, host: docker}\n- {name: w-5, role: worker, host: docker}\n",
      "has too few addresses for 6 docker nodes",
    ],
    [
      "docker: {imag: x}\nnodes:\n- {name: cp-1, role: control-plane, host: docker}\n",
      "docker.imag: unknown field",
    ],
    [
      "docker: {image: a/b:1, baseImage: debian:trixie}\nnodes:\n- {name: cp-1, role: control-plane, host: docker}\n",
      "docker.baseImage: is only used to build kubeforge's node image",
    ],
  ])("refuses %j", (text, problem) => {
    const problems = problemsOf(`${HEAD}${text}`);
    expect(problems.join("\n")).toContain(problem);
  });

  it("mixes docker nodes with the runner", () => {
    const spec = loadClusterSpec(
      `${HEAD}nodes:\n- {name: cp-1, role: control-plane, host: local}\n- {name: w-1, role: worker, host: docker}\n`,
      "cluster.yaml",
      {},
    );
    expect(spec.nodes.map((n) => n.host)).toEqual(["local", "docker"]);
  });
});

describe("node counts", () => {
  it.each([
    ["1 control-plane, 2 workers", { controlPlanes: 1, workers: 2 }],
    ["3 control-planes, 1 worker", { controlPlanes: 3, workers: 1 }],
    ["2 workers", { controlPlanes: 1, workers: 2 }],
    ["1 Control-Plane", { controlPlanes: 1, workers: 0 }],
    [" 3  control-planes ,0 workers ", { controlPlanes: 3, workers: 0 }],
  ])("%j", (text, counts) => {
    expect(parseNodeCounts(text)).toEqual(counts);
  });

  it.each([
    ["", "it is empty"],
    ["one control-plane", '"one control-plane" is not'],
    ["1 master", '"1 master" is not'],
    ["1 worker, 2 workers", "workers is counted twice"],
    ["0 control-planes", "control planes must number 1 to 7, got 0"],
    [`${MAX_CONTROL_PLANES + 1} control-planes`, "control planes must number 1 to 7"],
    ["51 workers", "workers must number 0 to 50, got 51"],
  ])("refuses %j", (text, problem) => {
    const parsed = parseNodeCounts(text);
    expect(parsed).toHaveProperty("problem");
    expect((parsed as { problem: string }).problem).toContain(problem);
  });

  it("expands to docker nodes that load as a Cluster", () => {
    const nodes = dockerNodes({ controlPlanes: 3, workers: 1 });
    expect(nodes).toEqual([
      { name: "cp-1", role: "control-plane", host: "docker" },
      { name: "cp-2", role: "control-plane", host: "docker" },
      { name: "cp-3", role: "control-plane", host: "docker" },
      { name: "w-1", role: "worker", host: "docker" },
    ]);
    const yaml = nodes.map((n) => `- {name: ${n.name}, role: ${n.role}, host: ${n.host}}`);
    const spec = loadClusterSpec(`${HEAD}nodes:\n${yaml.join("\n")}\n`, "c.yaml", {});
    expect(spec.nodes.map((n) => n.name)).toEqual(["cp-1", "cp-2", "cp-3", "w-1"]);
    expect(() => dockerNodes({ controlPlanes: 0, workers: 1 })).toThrow(/1 to 7/);
  });
});

describe("network plan", () => {
  it("gives stable addresses from .10 on and refuses a subnet too small", () => {
    expect(nodeAddresses("172.30.5.0/24", 3)).toEqual([
      "172.30.5.10",
      "172.30.5.11",
      "172.30.5.12",
    ]);
    expect(nodeAddresses("172.30.5.0/28", 5)).toEqual([
      "172.30.5.10",
      "172.30.5.11",
      "172.30.5.12",
      "172.30.5.13",
      "172.30.5.14",
    ]);
    expect(nodeAddresses("172.30.5.0/28", 6)).toBeUndefined();
  });

  it("tries every /24 of 172.30.0.0/16 once, starting from the cluster's name", () => {
    const a = candidateSubnets("ci");
    expect(new Set(a).size).toBe(256);
    expect(a.every((s) => /^172\.30\.\d+\.0\/24$/.test(s))).toBe(true);
    expect(candidateSubnets("ci")).toEqual(a);
  });

  it("names resources after the cluster and node", () => {
    expect(containerName("ci", "cp-1")).toBe("kubeforge-ci-cp-1");
  });

  it.each([
    ["debian:bookworm-slim", true],
    ["ghcr.io/acme/node:1.2", true],
    ["localhost:5000/n@sha256:" + "a".repeat(64), true],
    ["kindest/node", true],
    ["Debian", false],
    ["debian:", false],
    ["a b", false],
  ])("isImageReference(%j) = %s", (text, ok) => {
    expect(isImageReference(text)).toBe(ok);
  });
});
