import { describe, expect, it } from "vitest";
import { defaultPrepare } from "../../../../src/config/cluster/defaults.js";
import type { ClusterNodeSpec, ClusterSpec } from "../../../../src/config/cluster/types.js";
import { decodeConfigDocuments } from "../../../../src/config/load.js";
import { parseYAMLDocuments } from "../../../../src/config/yaml.js";
import {
  documentsYAML,
  initDocuments,
  joinDocuments,
} from "../../../../src/cluster/up/kubeadm-documents.js";

/** The Cluster's kubeadm documents, decoded as the Cluster loader decodes them. */
const userDocuments = (text: string | undefined) =>
  text === undefined ? undefined : decodeConfigDocuments(text, "the Cluster's kubeadm documents");

const TOKEN = "abcdef.0123456789abcdef";
const KEY = "a".repeat(64);
const HASH = `sha256:${"b".repeat(64)}`;

function spec(documents?: string): ClusterSpec {
  return {
    apiVersion: "kubeforge.dev/v1alpha1",
    kind: "Cluster",
    name: "ci",
    kubernetesVersion: "v1.35.0",
    networking: {
      podSubnet: "10.244.0.0/16",
      serviceSubnet: "10.96.0.0/12",
      dnsDomain: "cluster.local",
    },
    cni: { type: "bridge" },
    storage: "local-path",
    kubeadm: documents ? { documents } : {},
    ssh: {},
    nodes: [],
    wait: "5m",
    concurrency: 8,
    prepare: defaultPrepare(),
  };
}

const cp: ClusterNodeSpec = {
  name: "cp-1",
  role: "control-plane",
  host: "local",
  address: "10.0.0.10",
};
const worker: ClusterNodeSpec = {
  name: "w-1",
  role: "worker",
  host: "ssh://u@10.0.0.11",
  address: "10.0.0.11",
  taints: [{ key: "dedicated", value: "ci", effect: "NoSchedule" }],
};

describe("initDocuments", () => {
  it("sets what up decides on top of the user's documents, which kubeadm's loader accepts", () => {
    const user = userDocuments(
      [
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: InitConfiguration",
        "nodeRegistration: {ignorePreflightErrors: [all], name: ignored}",
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: ClusterConfiguration",
        "apiServer: {certSANs: [api.example.com]}",
        "---",
        "apiVersion: kubelet.config.k8s.io/v1beta1",
        "kind: KubeletConfiguration",
        "maxPods: 50",
      ].join("\n"),
    );
    const text = documentsYAML(
      initDocuments(
        spec(),
        user,
        cp,
        {
          kubernetesVersion: "v1.35.2",
          controlPlaneEndpoint: "lb.example.com:6443",
          extraCertSANs: ["203.0.113.10", "api.example.com"],
        },
        { token: TOKEN, certificateKey: KEY },
      ),
    );
    const docs = decodeConfigDocuments(text, "generated");
    expect(docs.init?.nodeRegistration?.name).toBe("cp-1");
    expect(docs.init?.nodeRegistration?.ignorePreflightErrors).toEqual(["all"]);
    expect(docs.init?.localAPIEndpoint?.advertiseAddress).toBe("10.0.0.10");
    expect(docs.init?.bootstrapTokens?.[0]?.token).toBe(TOKEN);
    expect(docs.init?.certificateKey).toBe(KEY);
    expect(docs.cluster?.kubernetesVersion).toBe("v1.35.2");
    expect(docs.cluster?.controlPlaneEndpoint).toBe("lb.example.com:6443");
    expect(docs.cluster?.networking?.podSubnet).toBe("10.244.0.0/16");
    expect(docs.cluster?.apiServer?.certSANs).toEqual(["api.example.com", "203.0.113.10"]);
    expect(docs.kubelet?.maxPods).toBe(50);
  });

  it("leaves the address to detection and the endpoint unset when the Cluster file has none", () => {
    const text = documentsYAML(
      initDocuments(
        spec(),
        userDocuments(undefined),
        { ...cp, address: undefined },
        {
          kubernetesVersion: "v1.35.0",
          extraCertSANs: [],
        },
        { token: TOKEN },
      ),
    );
    const [init, cluster] = parseYAMLDocuments(text, "t") as Record<string, unknown>[];
    expect(init!.localAPIEndpoint).toEqual({});
    expect(init!.certificateKey).toBeUndefined();
    expect(cluster!.controlPlaneEndpoint).toBeUndefined();
  });
});

describe("joinDocuments", () => {
  it("gives a worker token discovery with the CA pin and its taints, and no control-plane section", () => {
    const user = userDocuments(
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery: {tlsBootstrapToken: zzzzzz.zzzzzzzzzzzzzzzz}\ntimeouts: {discovery: 2m0s}\ncontrolPlane: {}\n",
    );
    const text = documentsYAML(
      joinDocuments(user, worker, {
        token: TOKEN,
        caCertHashes: [HASH],
        apiServerEndpoint: "10.0.0.10:6443",
        certificateKey: KEY,
      }),
    );
    const join = decodeConfigDocuments(text, "generated").join!;
    expect(join.discovery?.bootstrapToken).toEqual({
      apiServerEndpoint: "10.0.0.10:6443",
      token: TOKEN,
      caCertHashes: [HASH],
    });
    expect(join.discovery?.tlsBootstrapToken).toBeUndefined();
    expect(join.timeouts?.discovery).toBe("2m0s");
    expect(join.controlPlane).toBeUndefined();
    expect(join.nodeRegistration?.taints).toEqual(worker.taints);
    expect(join.nodeRegistration?.name).toBe("w-1");
  });

  it("gives a control plane its address and the certificate key", () => {
    const text = documentsYAML(
      joinDocuments(
        userDocuments(undefined),
        { ...cp, name: "cp-2", address: "10.0.0.12" },
        {
          token: TOKEN,
          caCertHashes: [HASH],
          apiServerEndpoint: "lb:6443",
          certificateKey: KEY,
        },
      ),
    );
    const join = decodeConfigDocuments(text, "generated").join!;
    expect(join.controlPlane?.localAPIEndpoint?.advertiseAddress).toBe("10.0.0.12");
    expect(join.controlPlane?.certificateKey).toBe(KEY);
    expect(join.nodeRegistration?.taints).toBeUndefined();
  });
});

// kubeadm docs, "Dual-stack support with kubeadm": every node's nodeRegistration.kubeletExtraArgs
// carries node-ip "<IPv4>,<IPv6>" (init and join); the advertise address stays one address.
describe("dual-stack: the kubelet's node-ip pair", () => {
  const secrets = { token: TOKEN, caCertHashes: [HASH], apiServerEndpoint: "[fd00::10]:6443" };

  it("init: node-ip after the user's kubelet arguments; the advertise address is the pair's first", () => {
    const user = userDocuments(
      'apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs: [{name: v, value: "4"}]\n',
    );
    const docs = initDocuments(
      spec(),
      user,
      { ...cp, address: "fd00::10", nodeIPs: ["fd00::10", "10.0.0.10"] },
      { kubernetesVersion: "v1.35.0", extraCertSANs: [] },
      { token: TOKEN },
    );
    const init = decodeConfigDocuments(documentsYAML(docs), "generated").init!;
    expect(init.nodeRegistration?.kubeletExtraArgs).toEqual([
      { name: "v", value: "4" },
      { name: "node-ip", value: "fd00::10,10.0.0.10" },
    ]);
    expect(init.localAPIEndpoint?.advertiseAddress).toBe("fd00::10");
  });

  it("join: workers and control planes alike", () => {
    for (const node of [worker, { ...cp, name: "cp-2" }]) {
      const join = joinDocuments(
        userDocuments(undefined),
        { ...node, address: "10.0.0.11", nodeIPs: ["10.0.0.11", "fd00::11"] },
        secrets,
      ).join!;
      expect(join.nodeRegistration?.kubeletExtraArgs).toEqual([
        { name: "node-ip", value: "10.0.0.11,fd00::11" },
      ]);
    }
  });

  it("no node-ip outside dual-stack", () => {
    const join = joinDocuments(userDocuments(undefined), worker, secrets).join!;
    expect(join.nodeRegistration?.kubeletExtraArgs).toBeUndefined();
  });
});

describe("skipPhases and patches", () => {
  it("go to the workflow they belong to, on top of the user's own", () => {
    const user = userDocuments(
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nskipPhases: [show-join-command]\n",
    );
    const init = decodeConfigDocuments(
      documentsYAML(
        initDocuments(
          spec(),
          user,
          cp,
          {
            kubernetesVersion: "v1.35.0",
            extraCertSANs: [],
            initSkipPhases: ["addon/kube-proxy"],
            patchesDir: "/runner/patches",
          },
          { token: TOKEN },
        ),
      ),
      "generated",
    ).init!;
    expect(init.skipPhases).toEqual(["show-join-command", "addon/kube-proxy"]);
    expect(init.patches?.directory).toBe("/runner/patches");
    const join = decodeConfigDocuments(
      documentsYAML(
        joinDocuments(
          userDocuments(undefined),
          worker,
          { token: TOKEN, caCertHashes: [HASH], apiServerEndpoint: "10.0.0.10:6443" },
          { joinSkipPhases: [], patchesDir: "/runner/patches" },
        ),
      ),
      "generated",
    ).join!;
    expect(join.skipPhases ?? []).toEqual([]);
    expect(join.patches?.directory).toBe("/runner/patches");
  });
});
