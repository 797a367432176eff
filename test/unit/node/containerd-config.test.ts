import { describe, expect, it } from "vitest";
import {
  containerdConfig,
  localRegistryHostsFile,
  registryHostsFiles,
} from "../../../src/node/runtime/containerd-config.js";
import { tomlKey, tomlString } from "../../../src/node/runtime/toml.js";

// The pure side of containerd's configuration: quoting and input checks. What containerd makes
// of the text is tested with containerd itself (test/integration/node/containerd-config.test.ts).

describe("TOML quoting", () => {
  it.each([
    ["plain", '"plain"'],
    ['a"b', '"a\\"b"'],
    ["a\\b", '"a\\\\b"'],
    ["line\nbreak\t", '"line\\nbreak\\t"'],
    ["\u0001\u007f", '"\\u0001\\u007f"'],
  ])("tomlString(%j) = %s", (input, expected) => {
    expect(tomlString(input)).toBe(expected);
  });

  it("quotes keys that are not bare", () => {
    expect(tomlKey("SystemdCgroup")).toBe("SystemdCgroup");
    expect(tomlKey("io.containerd.grpc.v1.cri")).toBe('"io.containerd.grpc.v1.cri"');
    expect(tomlKey("https://mirror.gcr.io")).toBe('"https://mirror.gcr.io"');
  });
});

describe("containerdConfig", () => {
  it("reflects the cgroup driver and sandbox image", () => {
    const on = containerdConfig({
      sandboxImage: "registry.k8s.io/pause:3.10",
      systemdCgroup: true,
    });
    const off = containerdConfig({
      sandboxImage: "registry.k8s.io/pause:3.9",
      systemdCgroup: false,
    });
    expect(on).toMatch(/^\s+SystemdCgroup = true$/m);
    expect(off).toMatch(/^\s+SystemdCgroup = false$/m);
    expect(on).toMatch(/^\s+sandbox_image = "registry.k8s.io\/pause:3.10"$/m);
    expect(off).toMatch(/^\s+sandbox_image = "registry.k8s.io\/pause:3.9"$/m);
    expect(on.startsWith("# Written by kubeforge")).toBe(true);
  });

  it.each([
    [
      "",
      "the container runtime's sandboxImage must be a non-empty value without spaces or control characters",
    ],
    [
      "pause 3.10",
      "the container runtime's sandboxImage must be a non-empty value without spaces or control characters",
    ],
    [
      "pause\u0000",
      "the container runtime's sandboxImage must be a non-empty value without spaces or control characters",
    ],
  ])("rejects sandboxImage %j", (sandboxImage, message) => {
    expect(() => containerdConfig({ sandboxImage, systemdCgroup: true })).toThrow(message);
  });
});

describe("registryHostsFiles", () => {
  it("writes one file per registry, mirrors in the order given", () => {
    const files = registryHostsFiles({
      "registry.local:5000": ["http://10.0.0.2:5000"],
      "docker.io": ["https://a.example", "https://b.example/prefix"],
    });
    expect(files.map((f) => f.path)).toEqual([
      "/etc/containerd/certs.d/docker.io/hosts.toml",
      "/etc/containerd/certs.d/registry.local:5000/hosts.toml",
    ]);
    const docker = files[0]!.content;
    expect(docker.indexOf('[host."https://a.example"]')).toBeLessThan(
      docker.indexOf('[host."https://b.example/prefix"]'),
    );
    expect(docker).not.toMatch(/^server/m);
    expect(registryHostsFiles({})).toEqual([]);
  });

  it.each([
    [{ "../etc": ["https://x"] }, 'registry mirror key "../etc" must be a registry host'],
    [
      { "docker.io/library": ["https://x"] },
      'registry mirror key "docker.io/library" must be a registry host',
    ],
    [{ "docker.io": [] }, "registry mirrors for docker.io must list at least one URL"],
    [
      { "docker.io": ["mirror.gcr.io"] },
      'registry mirror "mirror.gcr.io" for docker.io is not a URL',
    ],
    [
      { "docker.io": ["ftp://m"] },
      'registry mirror "ftp://m" for docker.io must be an http:// or https:// URL',
    ],
    [
      { "docker.io": ["https://u:p@m"] },
      'registry mirror "https://u:p@m" for docker.io must not carry credentials',
    ],
  ])("rejects %j", (mirrors, message) => {
    expect(() => registryHostsFiles(mirrors)).toThrow(message);
  });

  it("accepts the _default namespace", () => {
    expect(registryHostsFiles({ _default: ["https://m.example"] })[0]!.path).toBe(
      "/etc/containerd/certs.d/_default/hosts.toml",
    );
  });
});

describe("localRegistryHostsFile", () => {
  it("maps the registry's name to its plain-HTTP address, as kind's recipe does", () => {
    // kind docs "Local Registry": /etc/containerd/certs.d/localhost:${reg_port}/hosts.toml
    // holding [host."http://${reg_name}:5000"].
    const f = localRegistryHostsFile("localhost:5001", "http://kubeforge-registry:5000");
    expect(f.path).toBe("/etc/containerd/certs.d/localhost:5001/hosts.toml");
    expect(f.content).toBe(
      [
        "# Written by kubeforge: the local registry localhost:5001, served over plain HTTP by the runner.",
        'server = "http://kubeforge-registry:5000"',
        "",
        '[host."http://kubeforge-registry:5000"]',
        '  capabilities = ["pull", "resolve"]',
        "",
      ].join("\n"),
    );
  });

  it.each([
    ["localhost:5001", "https://10.0.0.1:5001", "must be an http:// URL"],
    [
      "localhost:5001",
      "10.0.0.1:5001",
      'registry mirror "10.0.0.1:5001" for localhost:5001 is not a URL',
    ],
    ["../x", "http://10.0.0.1:5001", 'registry mirror key "../x" must be a registry host'],
  ])("refuses %s → %s", (registry, server, message) => {
    expect(() => localRegistryHostsFile(registry, server)).toThrow(message);
  });
});
