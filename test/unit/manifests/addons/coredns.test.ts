import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/kube/types.js";
import {
  coreDNSConfigMapAction,
  coreDNSDeployment,
  coreDNSEnabled,
  coreDNSImage,
  coreDNSObjects,
  dnsServiceCreateFallsBackToUpdate,
  dnsServiceIP,
  existingCoreDNSReplicas,
} from "../../../../src/manifests/addons/coredns.js";
import { corefile } from "../../../../src/manifests/addons/corefile.js";
import { createPatchFile, type PatchSet } from "../../../../src/manifests/patches.js";
import { addonConfig, MINORS, NETWORKS } from "./fixtures.js";
import { kubectlRead, schemaProblems } from "./kube-read.js";

type Container = {
  image: string;
  ports: { containerPort: number; name: string; protocol: string }[];
  livenessProbe: { httpGet: { port: number | string; path: string } };
  readinessProbe: { httpGet: { port: number | string; path: string } };
};
type DeploymentSpec = {
  replicas: number;
  template: { spec: { containers: Container[]; tolerations: { key: string }[] } };
};
const spec = (d: KubeObject) => d.spec as DeploymentSpec;
const container = (d: KubeObject) => spec(d).template.spec.containers[0]!;

// kubeadm's CoreDNSConfigMap template (phases/addons/dns/manifests.go), rendered by hand for
// the domain "cluster.local": the Corefile of every release from v1.32 on.
const KUBEADM_COREFILE_CLUSTER_LOCAL = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`;

// The same template before kubernetes/kubernetes#128359 (kubeadm ≤1.31), for a custom domain:
// what an older cluster being re-applied may still hold.
const KUBEADM_1_31_COREFILE_CORP = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes corp.example in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`;

describe("every CoreDNS object, per release and network, read back by Kubernetes", () => {
  const cases = MINORS.flatMap((minor) => NETWORKS.map((net) => ({ minor, net })));
  it.each(cases)("v1.$minor, $net.name", ({ minor, net }) => {
    const { cfg, release } = addonConfig({
      minor,
      advertiseAddress: net.advertiseAddress,
      cluster: { networking: { serviceSubnet: net.serviceSubnet, podSubnet: net.podSubnet } },
    });
    const objects = coreDNSObjects(cfg, release);

    // kubeadm's order of writes (dns.go createCoreDNSAddon).
    expect(objects.inOrder.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      "ConfigMap/coredns",
      "ClusterRole/system:coredns",
      "ClusterRoleBinding/system:coredns",
      "ServiceAccount/coredns",
      "Deployment/coredns",
      "Service/kube-dns",
    ]);

    const read = kubectlRead(objects.inOrder);
    expect(read).toEqual(objects.inOrder);
    for (const obj of read) expect(schemaProblems(obj)).toEqual([]);

    const service = read[5] as { spec: Record<string, unknown> };
    expect(service.spec.clusterIP).toBe(net.dnsIP);
    // kubeadm leaves the family to the API server: SingleStack in the clusterIP's family.
    expect(service.spec).not.toHaveProperty("ipFamilies");
    expect(service.spec).not.toHaveProperty("ipFamilyPolicy");
    expect(container(objects.deployment).image).toBe(
      `registry.k8s.io/coredns/coredns:${release.coreDNSVersion}`,
    );
    expect(spec(objects.deployment).replicas).toBe(2);
  });
});

describe("the Corefile", () => {
  it("is kubeadm's template for the default domain", () => {
    const { cfg, release } = addonConfig();
    const data = coreDNSObjects(cfg, release).configMap.data as Record<string, string>;
    expect(data).toEqual({ Corefile: KUBEADM_COREFILE_CLUSTER_LOCAL });
  });

  it("substitutes a custom domain in the kubernetes plugin and the cache block", () => {
    const { cfg, release } = addonConfig({
      cluster: { networking: { dnsDomain: "corp.example" } },
    });
    const text = (coreDNSObjects(cfg, release).configMap.data as Record<string, string>).Corefile!;
    expect(text).toBe(KUBEADM_COREFILE_CLUSTER_LOCAL.replaceAll("cluster.local", "corp.example"));
  });

  it("has no cache block without a domain, as the template's {{- if .DNSDomain }}", () => {
    expect(corefile("")).toContain("\n    cache 30\n    loop\n");
    expect(corefile("")).toContain("kubernetes  in-addr.arpa ip6.arpa {");
  });
});

describe("the Deployment", () => {
  it.each(MINORS)("v1.%i probes CoreDNS on 8080 and 8181 as that release does", (minor) => {
    const { cfg, release } = addonConfig({ minor });
    const c = container(coreDNSDeployment(cfg, release));
    const portNames = c.ports.map((p) => `${p.name}:${p.containerPort}/${p.protocol}`);
    if (minor === 33) {
      expect(portNames).toEqual(["dns:53/UDP", "dns-tcp:53/TCP", "metrics:9153/TCP"]);
      expect(c.livenessProbe.httpGet).toMatchObject({ path: "/health", port: 8080 });
      expect(c.readinessProbe.httpGet).toMatchObject({ path: "/ready", port: 8181 });
    } else {
      expect(portNames).toEqual([
        "dns:53/UDP",
        "dns-tcp:53/TCP",
        "metrics:9153/TCP",
        "liveness-probe:8080/TCP",
        "readiness-probe:8181/TCP",
      ]);
      expect(c.livenessProbe.httpGet).toMatchObject({ path: "/health", port: "liveness-probe" });
      expect(c.readinessProbe.httpGet).toMatchObject({ path: "/ready", port: "readiness-probe" });
    }
  });

  it("tolerates the control-plane taint kubeadm puts on the first node", () => {
    const { cfg, release } = addonConfig();
    const keys = spec(coreDNSDeployment(cfg, release)).template.spec.tolerations.map((t) => t.key);
    expect(keys).toContain(cfg.init.nodeRegistration.taints[0]!.key);
  });

  it("keeps the replica count it is given (the existing Deployment's)", () => {
    const { cfg, release } = addonConfig();
    expect(spec(coreDNSDeployment(cfg, release, { replicas: 5 })).replicas).toBe(5);
  });

  it("applies corednsdeployment patches and no others", () => {
    const { cfg, release } = addonConfig();
    const patches: PatchSet = {
      dir: "/patches",
      ignored: [],
      files: [
        createPatchFile(
          "/patches/corednsdeployment.yaml",
          "corednsdeployment",
          "strategic",
          "spec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: coredns\n        resources:\n          limits:\n            memory: 300Mi\n",
        ),
        createPatchFile("/patches/etcd+merge.yaml", "etcd", "merge", "spec:\n  replicas: 9\n"),
      ],
    };
    const lines: string[] = [];
    const d = coreDNSDeployment(cfg, release, { patches, log: (l) => lines.push(l) });
    expect(spec(d).replicas).toBe(3);
    const c = container(d) as Container & { resources: unknown; args: string[] };
    expect(c.resources).toEqual({
      limits: { memory: "300Mi" },
      requests: { cpu: "100m", memory: "70Mi" },
    });
    expect(c.args).toEqual(["-conf", "/etc/coredns/Corefile"]); // merged by name, not replaced
    expect(lines).toEqual([
      '[patches] Applied patch of type "application/strategic-merge-patch+json" to target "corednsdeployment"',
    ]);
  });
});

describe("the CoreDNS image (kubeadm's GetDNSImage)", () => {
  const { release } = addonConfig({ minor: 35 });
  const tag = release.coreDNSVersion;
  it.each([
    [{ imageRepository: "registry.k8s.io" }, `registry.k8s.io/coredns/coredns:${tag}`],
    [{ imageRepository: "mirror.example:5000/k8s" }, `mirror.example:5000/k8s/coredns:${tag}`],
    [
      { imageRepository: "mirror.example/k8s", dns: { imageRepository: "dns.example/coredns" } },
      `dns.example/coredns/coredns:${tag}`,
    ],
    [
      { imageRepository: "mirror.example/k8s", dns: { imageRepository: "registry.k8s.io" } },
      `registry.k8s.io/coredns/coredns:${tag}`,
    ],
    [
      { imageRepository: "registry.k8s.io", dns: { imageTag: "v1.99.0" } },
      "registry.k8s.io/coredns/coredns:v1.99.0",
    ],
  ])("%j → %s", (cluster, image) => {
    expect(coreDNSImage(cluster, release)).toBe(image);
  });

  it("follows ClusterConfiguration through to the Deployment", () => {
    const { cfg } = addonConfig({ cluster: { imageRepository: "mirror.example/k8s" } });
    expect(container(coreDNSDeployment(cfg, release)).image).toBe(
      `mirror.example/k8s/coredns:${tag}`,
    );
  });

  it.each(MINORS)("v1.%i uses that release's CoreDNS tag", (minor) => {
    const r = addonConfig({ minor }).release;
    expect(coreDNSImage({ imageRepository: "registry.k8s.io" }, r)).toMatch(
      new RegExp(`^registry\\.k8s\\.io/coredns/coredns:v1\\.\\d+\\.\\d+$`),
    );
  });
});

describe("the DNS Service IP (kubeadm's GetDNSIP)", () => {
  it.each([
    ["10.96.0.0/12", "10.96.0.10"],
    ["fd00::/108", "fd00::a"],
    ["10.96.0.0/16,fd00::/108", "10.96.0.10"],
    ["fd00::/108, 10.96.0.0/16", "fd00::a"],
    ["172.16.255.0/24", "172.16.255.10"],
  ])("%s → %s", (subnet, ip) => {
    expect(dnsServiceIP(subnet)).toBe(ip);
  });

  it.each(["", "not-a-cidr", "10.96.0.0/29"])("rejects %j naming the field", (subnet) => {
    expect(() => dnsServiceIP(subnet)).toThrow(/networking\.serviceSubnet/);
  });
});

describe("re-applying to a cluster that has CoreDNS", () => {
  const deployment = (name: string, replicas?: number): KubeObject => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "kube-system" },
    spec: replicas === undefined ? {} : { replicas },
  });

  it("keeps the existing replica count, 2 when there is no Deployment", () => {
    expect(existingCoreDNSReplicas([])).toBe(2);
    expect(existingCoreDNSReplicas([deployment("coredns", 5)])).toBe(5);
    expect(existingCoreDNSReplicas([deployment("coredns", 0)])).toBe(0);
    expect(() => existingCoreDNSReplicas([deployment("a", 1), deployment("b", 2)])).toThrow(
      "multiple DNS addon deployments found in kube-system with label k8s-app=kube-dns: a, b",
    );
  });

  const configMap = (data: Record<string, string>): KubeObject => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "coredns", namespace: "kube-system" },
    data,
  });

  it.each([
    ["kubeadm's current Corefile", KUBEADM_COREFILE_CLUSTER_LOCAL, "update"],
    ["kubeadm 1.31's Corefile for another domain", KUBEADM_1_31_COREFILE_CORP, "update"],
    [
      "kubeadm's Corefile with plugins reordered and re-indented",
      KUBEADM_COREFILE_CLUSTER_LOCAL.replace("    loop\n    reload\n", "  reload\n        loop\n"),
      "update",
    ],
    ["an empty Corefile", "", "update"],
    [
      "a Corefile with a hosts block added",
      KUBEADM_COREFILE_CLUSTER_LOCAL.replace(
        "    ready\n",
        "    ready\n    hosts {\n       10.0.0.9 registry.local\n       fallthrough\n    }\n",
      ),
      "retain",
    ],
    [
      "a Corefile forwarding elsewhere",
      KUBEADM_COREFILE_CLUSTER_LOCAL.replace("forward . /etc/resolv.conf", "forward . 1.1.1.1"),
      "retain",
    ],
    [
      "a Corefile with a second server block",
      `${KUBEADM_COREFILE_CLUSTER_LOCAL}corp.example:53 {\n    forward . 10.0.0.53\n}\n`,
      "retain",
    ],
    ["unbalanced braces", KUBEADM_COREFILE_CLUSTER_LOCAL.slice(0, -2), "retain"],
  ])("%s → %s", (_, text, action) => {
    expect(coreDNSConfigMapAction(configMap({ Corefile: text }))).toBe(action);
  });

  it("creates the ConfigMap when there is none, and refuses one without a Corefile", () => {
    expect(coreDNSConfigMapAction(undefined)).toBe("create");
    expect(() => coreDNSConfigMapAction(configMap({ other: "x" }))).toThrow(
      "unable to find the CoreDNS Corefile data",
    );
  });

  it("updates the Service when its create is refused as existing or invalid", () => {
    expect([409, 422, 403, 500].map(dnsServiceCreateFallsBackToUpdate)).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });
});

it("is skipped when dns.disabled is set", () => {
  expect(coreDNSEnabled(addonConfig().cfg)).toBe(true);
  expect(coreDNSEnabled(addonConfig({ cluster: { dns: { disabled: true } } }).cfg)).toBe(false);
});
