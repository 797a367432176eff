import { describe, expect, it } from "vitest";
import { defaultPrepare } from "../../../../src/config/cluster/defaults.js";
import { loadClusterSpec, type LoadClusterOptions } from "../../../../src/config/cluster/load.js";
import { ConfigError } from "../../../../src/config/load.js";
import { OFFICIAL_SOURCES } from "../../../../src/node/artifacts/catalog.js";

// The Cluster's `prepare` section: node preparation `up` does before init/join (issue 6).

const HEAD = "apiVersion: kubeforge.dev/v1alpha1\nkind: Cluster\n";

function load(body: string, opts: LoadClusterOptions = {}) {
  return loadClusterSpec(`${HEAD}${body}`, "cluster.yaml", opts);
}

function problemsOf(body: string, opts: LoadClusterOptions = {}): string[] {
  try {
    load(body, opts);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e.problems;
  }
  throw new Error("expected the Cluster file to be refused");
}

describe("prepare: defaults", () => {
  it("prepares every host, installs packages, pre-pulls, downloads from the official locations", () => {
    expect(load("").prepare).toEqual({
      enabled: true,
      installPackages: true,
      prePullImages: true,
      registryMirrors: {},
      downloads: {
        kubernetes: "https://dl.k8s.io/release",
        // kubeadm's util/version.go kubeCIBucketURL, with splitVersion's "ci" prefix.
        kubernetesCI: "https://storage.googleapis.com/k8s-release-dev/ci",
        crictl: "https://github.com/kubernetes-sigs/cri-tools/releases/download",
        cniPlugins: "https://github.com/containernetworking/plugins/releases/download",
      },
    });
    expect(defaultPrepare().downloads).toEqual(OFFICIAL_SOURCES);
  });

  it("gives each call its own object (a caller changing one does not change the next)", () => {
    const a = defaultPrepare();
    a.registryMirrors["docker.io"] = ["https://m"];
    a.downloads.kubernetes = "https://x";
    expect(defaultPrepare()).toEqual(load("").prepare);
  });
});

describe("prepare: accepted", () => {
  it.each<[string, string, object]>([
    ["off", "prepare: {enabled: false}", { enabled: false, installPackages: true }],
    [
      "no packages, no pulls",
      "prepare: {installPackages: false, prePullImages: false}",
      { enabled: true, installPackages: false, prePullImages: false },
    ],
    [
      "mirrors (a single URL is a list of one; http for a local cache)",
      'prepare:\n  registryMirrors:\n    docker.io: ["https://mirror.gcr.io", "https://m2.example.com/v2"]\n    "registry.local:5000": http://10.0.0.5:5000\n    _default: [https://cache.example.com]\n',
      {
        registryMirrors: {
          "docker.io": ["https://mirror.gcr.io", "https://m2.example.com/v2"],
          "registry.local:5000": ["http://10.0.0.5:5000"],
          _default: ["https://cache.example.com"],
        },
      },
    ],
    [
      "one download location moved (trailing slash dropped), the others official",
      "prepare: {downloads: {kubernetes: 'https://mirror.example.com/k8s/'}}",
      {
        downloads: {
          kubernetes: "https://mirror.example.com/k8s",
          crictl: OFFICIAL_SOURCES.crictl,
          cniPlugins: OFFICIAL_SOURCES.cniPlugins,
        },
      },
    ],
  ])("%s", (_what, body, expected) => {
    expect(load(body).prepare).toMatchObject(expected);
  });

  it("an empty section is the default", () => {
    expect(load("prepare: {}\n").prepare).toEqual(defaultPrepare());
    expect(load("prepare:\n").prepare).toEqual(defaultPrepare());
  });
});

describe("prepare: refused, one sentence naming the field", () => {
  it.each<[string, string, string[]]>([
    [
      "a misspelt field",
      "prepare: {enable: false}",
      ['cluster.yaml: prepare.enable: unknown field; did you mean "enabled"?'],
    ],
    [
      "not a mapping",
      "prepare: yes",
      ["cluster.yaml: prepare: must be a mapping, got boolean true"],
    ],
    [
      "a boolean written as text",
      "prepare: {enabled: 'no', prePullImages: 1}",
      [
        'cluster.yaml: prepare.enabled: must be true or false, got string "no"',
        "cluster.yaml: prepare.prePullImages: must be true or false, got number 1",
      ],
    ],
    [
      "mirrors as a list",
      "prepare: {registryMirrors: [https://mirror.gcr.io]}",
      [
        "cluster.yaml: prepare.registryMirrors: must be a mapping of registry to mirror URLs, got a list",
      ],
    ],
    [
      "a registry that is not a host",
      "prepare: {registryMirrors: {'https://docker.io': [https://mirror.gcr.io]}}",
      [
        'cluster.yaml: prepare.registryMirrors["https://docker.io"]: "https://docker.io" is not a registry host such as docker.io or registry.local:5000 (or _default for every registry)',
      ],
    ],
    [
      "an empty mirror list",
      "prepare: {registryMirrors: {docker.io: []}}",
      ['cluster.yaml: prepare.registryMirrors["docker.io"]: must list at least one mirror URL'],
    ],
    [
      "a mirror that is not an http(s) URL",
      "prepare: {registryMirrors: {docker.io: [mirror.gcr.io, 'ftp://m.example.com', 'https://u:p@m.example.com']}}",
      [
        'cluster.yaml: prepare.registryMirrors["docker.io"][0]: "mirror.gcr.io" is not a URL',
        'cluster.yaml: prepare.registryMirrors["docker.io"][1]: "ftp://m.example.com" must be an https:// or http:// URL',
        'cluster.yaml: prepare.registryMirrors["docker.io"][2]: "https://u:p@m.example.com" must not carry credentials, a query or a fragment',
      ],
    ],
    [
      "a download location over plain http",
      "prepare: {downloads: {crictl: 'http://mirror.example.com/cri-tools'}}",
      [
        'cluster.yaml: prepare.downloads.crictl: "http://mirror.example.com/cri-tools" must be an https:// URL',
      ],
    ],
    [
      "a download location that is not a URL, and an unknown one",
      "prepare: {downloads: {cniPlugins: ./plugins, kubeadm: https://x.example.com}}",
      [
        "cluster.yaml: prepare.downloads.kubeadm: unknown field",
        'cluster.yaml: prepare.downloads.cniPlugins: "./plugins" is not a URL',
      ],
    ],
  ])("%s", (_what, body, expected) => {
    expect(problemsOf(`${body}\n`)).toEqual(expected);
  });
});

describe("prepare: overrides (action inputs, flags)", () => {
  it("win over the file's values", () => {
    const spec = load("prepare: {enabled: true, installPackages: true, prePullImages: true}\n", {
      overrides: { prepare: false, installPackages: false, prePullImages: false },
    });
    expect(spec.prepare).toMatchObject({
      enabled: false,
      installPackages: false,
      prePullImages: false,
    });
  });

  it("apply to a file without the section", () => {
    expect(load("", { overrides: { prePullImages: false } }).prepare).toEqual({
      ...defaultPrepare(),
      prePullImages: false,
    });
  });

  it("are named by where they came from", () => {
    expect(
      problemsOf("", {
        overrides: { prepare: "no" as unknown as boolean, from: { prepare: "input prepare" } },
      }),
    ).toEqual([
      'cluster.yaml: prepare.enabled (from input prepare): must be true or false, got string "no"',
    ]);
  });
});
