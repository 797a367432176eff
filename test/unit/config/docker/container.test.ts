import { describe, expect, it } from "vitest";
import {
  capabilitiesMissing,
  nodeContainerBody,
  type NodeContainerInput,
} from "../../../../src/config/docker/container.js";
import {
  nodeImageRecipe,
  nodeImageTag,
  recipeDigest,
} from "../../../../src/config/docker/node-image.js";

const INPUT: NodeContainerInput = {
  cluster: "ci",
  node: { name: "cp-1", role: "control-plane" },
  image: "kubeforge/node:abc",
  network: "kubeforge-ci",
  address: "172.30.5.10",
  hosts: [
    { name: "cp-1", address: "172.30.5.10" },
    { name: "w-1", address: "172.30.5.11" },
  ],
  privileged: true,
  libModules: true,
  apiServerPort: 6443,
};

type Body = {
  HostConfig: Record<string, unknown>;
  NetworkingConfig: { EndpointsConfig: Record<string, unknown> };
} & Record<string, unknown>;

describe("a node container's create body", () => {
  it("runs systemd with /var on the node's volume, tmpfs, modules, its address and the API port on loopback", () => {
    const b = nodeContainerBody(INPUT) as Body;
    expect(b.Hostname).toBe("cp-1");
    expect(b.StopSignal).toBe("SIGRTMIN+3");
    expect(b.Labels).toEqual({
      "dev.kubeforge.cluster": "ci",
      "dev.kubeforge.node": "cp-1",
      "dev.kubeforge.role": "control-plane",
    });
    expect(b.HostConfig).toMatchObject({
      Privileged: true,
      CgroupnsMode: "private",
      Tmpfs: { "/run": "rw,nosuid,nodev,exec", "/tmp": "rw,nosuid,nodev,exec" },
      Mounts: [
        { Type: "volume", Source: "kubeforge-ci-cp-1-var", Target: "/var" },
        { Type: "bind", Source: "/lib/modules", Target: "/lib/modules", ReadOnly: true },
      ],
      NetworkMode: "kubeforge-ci",
      ExtraHosts: ["cp-1:172.30.5.10", "w-1:172.30.5.11"],
      PortBindings: { "6443/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }] },
    });
    expect(b.NetworkingConfig.EndpointsConfig["kubeforge-ci"]).toEqual({
      IPAMConfig: { IPv4Address: "172.30.5.10" },
      Aliases: ["cp-1"],
    });
  });

  it("without privileges: every capability the engine grants, confinements lifted, /proc/sys writable", () => {
    const { apiServerPort, ...worker } = INPUT;
    expect(apiServerPort).toBe(6443);
    const b = nodeContainerBody({
      ...worker,
      node: { name: "w-1", role: "worker" },
      privileged: false,
      capDrop: ["SYS_RESOURCE"],
      libModules: false,
    }) as Body;
    expect(b.HostConfig.Privileged).toBeUndefined();
    expect(b.HostConfig).toMatchObject({
      CapAdd: ["ALL"],
      CapDrop: ["SYS_RESOURCE"],
      SecurityOpt: ["seccomp=unconfined", "apparmor=unconfined"],
      MaskedPaths: [],
      ReadonlyPaths: [],
    });
    expect(b.HostConfig.Mounts).toHaveLength(1);
    expect(b.HostConfig.PortBindings).toBeUndefined();
    expect(b.ExposedPorts).toBeUndefined();
  });

  it("names the capabilities a bounding set lacks (capability.h numbering)", () => {
    // This machine's sandbox: every capability up to CHECKPOINT_RESTORE (40) but SYS_RESOURCE (24).
    expect(capabilitiesMissing("000001fffeffffff")).toEqual(["SYS_RESOURCE"]);
    expect(capabilitiesMissing("000001ffffffffff")).toEqual([]);
    expect(capabilitiesMissing("00000000a80425fb")).toContain("SYS_ADMIN");
  });
});

describe("kubeforge's node image recipe", () => {
  it("is tagged by its digest, which changes with the base image", () => {
    const a = nodeImageRecipe("debian:bookworm-slim");
    const b = nodeImageRecipe("ubuntu:24.04");
    expect(nodeImageTag(a).ref).toBe(`kubeforge/node:${recipeDigest(a).slice(0, 16)}`);
    expect(nodeImageTag(a).ref).not.toBe(nodeImageTag(b).ref);
    expect(nodeImageTag(nodeImageRecipe("debian:bookworm-slim"))).toEqual(nodeImageTag(a));
    expect(a.script).toContain("apt-get install -y -qq --no-install-recommends $missing");
    expect(a.packages).toEqual(
      expect.arrayContaining(["systemd", "containerd", "haproxy", "socat"]),
    );
  });
});
