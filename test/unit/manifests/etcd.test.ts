import { describe, expect, it } from "vitest";
import {
  etcdCommand,
  etcdPod,
  etcdProbeEndpoint,
  etcdUsesV36Flags,
  initEtcdPod,
} from "../../../src/manifests/etcd.js";
import { initConfig, release133, release135 } from "./fixtures.js";

const COMMON = [
  "--cert-file=/etc/kubernetes/pki/etcd/server.crt",
  "--client-cert-auth=true",
  "--data-dir=/var/lib/etcd",
  "--key-file=/etc/kubernetes/pki/etcd/server.key",
  "--peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt",
  "--peer-client-cert-auth=true",
  "--peer-key-file=/etc/kubernetes/pki/etcd/peer.key",
  "--peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
  "--snapshot-count=10000",
  "--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
];

describe("etcd command", () => {
  it("v1.35 (etcd 3.6): feature-gate flags, IPv4 URLs, single-member initial cluster", () => {
    const cmd = etcdCommand(initEtcdPod(initConfig(), release135()));
    expect(cmd).toEqual([
      "etcd",
      ...[
        ...COMMON,
        "--advertise-client-urls=https://10.0.0.4:2379",
        "--feature-gates=InitialCorruptCheck=true",
        "--initial-advertise-peer-urls=https://10.0.0.4:2380",
        "--initial-cluster=cp-1=https://10.0.0.4:2380",
        "--listen-client-urls=https://127.0.0.1:2379,https://10.0.0.4:2379",
        "--listen-metrics-urls=http://127.0.0.1:2381",
        "--listen-peer-urls=https://10.0.0.4:2380",
        "--name=cp-1",
        "--watch-progress-notify-interval=5s",
      ].sort(),
    ]);
  });

  it("v1.33 (etcd 3.5): the experimental-* flag names", () => {
    const cmd = etcdCommand(
      initEtcdPod(
        initConfig((c) => (c.cluster.kubernetesVersion = "v1.33.0")),
        release133(),
      ),
    );
    expect(cmd).toContain("--experimental-initial-corrupt-check=true");
    expect(cmd).toContain("--experimental-watch-progress-notify-interval=5s");
    expect(cmd.some((a) => a.startsWith("--feature-gates="))).toBe(false);
  });

  it("an IPv6 advertise address: bracketed URLs and the ::1 loopback", () => {
    const cmd = etcdCommand(
      initEtcdPod(
        initConfig((c) => (c.init.localAPIEndpoint.advertiseAddress = "fd00::10")),
        release135(),
      ),
    );
    expect(cmd).toContain("--listen-client-urls=https://[::1]:2379,https://[fd00::10]:2379");
    expect(cmd).toContain("--listen-metrics-urls=http://[::1]:2381");
    expect(cmd).toContain("--initial-cluster=cp-1=https://[fd00::10]:2380");
    expect(cmd).toContain("--advertise-client-urls=https://[fd00::10]:2379");
  });

  it("join: every member and --initial-cluster-state=existing", () => {
    const cfg = initConfig((c) => (c.init.nodeRegistration.name = "cp-2"));
    const cmd = etcdCommand(
      etcdPod(
        {
          cluster: cfg.cluster,
          endpoint: { advertiseAddress: "10.0.0.5", bindPort: 6443 },
          nodeName: "cp-2",
          timeouts: cfg.init.timeouts,
          initialCluster: [
            { name: "cp-1", peerURL: "https://10.0.0.4:2380" },
            { name: "cp-2", peerURL: "https://10.0.0.5:2380" },
          ],
        },
        release135(),
      ),
    );
    expect(cmd).toContain(
      "--initial-cluster=cp-1=https://10.0.0.4:2380,cp-2=https://10.0.0.5:2380",
    );
    expect(cmd).toContain("--initial-cluster-state=existing");
  });

  it("extraArgs override defaults", () => {
    const cfg = initConfig((c) => {
      c.cluster.etcd.local!.extraArgs = [
        { name: "snapshot-count", value: "5000" },
        { name: "quota-backend-bytes", value: "8589934592" },
      ];
    });
    const cmd = etcdCommand(initEtcdPod(cfg, release135()));
    expect(cmd.filter((a) => a.startsWith("--snapshot-count="))).toEqual(["--snapshot-count=5000"]);
    expect(cmd).toContain("--quota-backend-bytes=8589934592");
  });

  it("refuses external etcd", () => {
    const cfg = initConfig(
      (c) => (c.cluster.etcd = { external: { endpoints: ["https://e:2379"] } }),
    );
    expect(() => initEtcdPod(cfg, release135())).toThrow(/external etcd/);
  });
});

describe("etcd flag names by image tag (local.go: ParseSemantic(tag).AtLeast(3.6.0))", () => {
  const cases: [string, boolean][] = [
    ["3.6.6-0", true],
    ["3.6.0", true],
    ["v3.6.1", true],
    ["3.7.2-0", true],
    ["3.5.21-0", false],
    ["3.5.99", false],
    // A pre-release of 3.6.0 sorts before 3.6.0.
    ["3.6.0-rc.1", false],
    ["latest", false],
    ["3.6", false],
    ["=3.6.0", false],
  ];
  for (const [tag, v36] of cases) {
    it(`${tag} → ${v36 ? "feature-gates" : "experimental-*"}`, () => {
      expect(etcdUsesV36Flags(tag)).toBe(v36);
    });
  }

  it("an etcd.local.imageTag decides, with etcd.local.imageRepository", () => {
    const cfg = initConfig((c) => {
      c.cluster.etcd.local!.imageTag = "3.5.15-0";
      c.cluster.etcd.local!.imageRepository = "quay.io/coreos";
    });
    const pod = initEtcdPod(cfg, release135());
    expect(pod.spec.containers[0]!.image).toBe("quay.io/coreos/etcd:3.5.15-0");
    expect(etcdCommand(pod)).toContain("--experimental-initial-corrupt-check=true");
    // Otherwise the release's etcd tag, from the default repository.
    expect(initEtcdPod(initConfig(), release135()).spec.containers[0]!.image).toBe(
      `registry.k8s.io/etcd:${release135().etcdVersion}`,
    );
  });
});

describe("etcd pod", () => {
  it("has kubeadm's volumes (sorted), mounts (data first, read-write), resources and annotation", () => {
    const pod = initEtcdPod(
      initConfig((c) => (c.cluster.etcd.local!.dataDir = "/data/etcd")),
      release135(),
    );
    expect(pod.spec.volumes).toEqual([
      {
        name: "etcd-certs",
        hostPath: { path: "/etc/kubernetes/pki/etcd", type: "DirectoryOrCreate" },
      },
      { name: "etcd-data", hostPath: { path: "/data/etcd", type: "DirectoryOrCreate" } },
    ]);
    const c = pod.spec.containers[0]!;
    expect(c.volumeMounts).toEqual([
      { name: "etcd-data", mountPath: "/data/etcd" },
      { name: "etcd-certs", mountPath: "/etc/kubernetes/pki/etcd" },
    ]);
    expect(c.resources).toEqual({ requests: { cpu: "100m", memory: "100Mi" } });
    expect(pod.metadata.annotations).toEqual({
      "kubeadm.kubernetes.io/etcd.advertise-client-urls": "https://10.0.0.4:2379",
    });
    expect(pod.metadata.labels).toEqual({ component: "etcd", tier: "control-plane" });
    expect(c.command).toContain("--data-dir=/data/etcd");
  });

  it("gets extraEnvs but no proxy variables", () => {
    const pod = initEtcdPod(
      initConfig(
        (c) =>
          (c.cluster.etcd.local!.extraEnvs = [{ name: "ETCD_UNSUPPORTED_ARCH", value: "arm" }]),
      ),
      release135(),
    );
    expect(pod.spec.containers[0]!.env).toEqual([{ name: "ETCD_UNSUPPORTED_ARCH", value: "arm" }]);
  });

  it("probes /livez and /readyz on the metrics port: named in 1.35, numeric in 1.33", () => {
    const cur = initEtcdPod(initConfig(), release135()).spec.containers[0]!;
    expect(cur.livenessProbe.httpGet).toEqual({
      host: "127.0.0.1",
      path: "/livez",
      port: "probe-port",
      scheme: "HTTP",
    });
    expect(cur.readinessProbe?.httpGet.path).toBe("/readyz");
    expect(cur.startupProbe.httpGet.path).toBe("/readyz");
    expect(cur.ports).toEqual([{ name: "probe-port", containerPort: 2381, protocol: "TCP" }]);
    const old = initEtcdPod(
      initConfig((c) => (c.cluster.kubernetesVersion = "v1.33.0")),
      release133(),
    ).spec.containers[0]!;
    expect(old.livenessProbe.httpGet.port).toBe(2381);
    expect(old.ports).toBeUndefined();
  });

  it("probes ::1 for an IPv6 node", () => {
    const pod = initEtcdPod(
      initConfig((c) => (c.init.localAPIEndpoint.advertiseAddress = "2001:db8::4")),
      release135(),
    );
    expect(pod.spec.containers[0]!.livenessProbe.httpGet.host).toBe("::1");
  });
});

describe("etcd probe endpoint (kubeadm's GetEtcdProbeEndpoint)", () => {
  const cases: { metrics?: string; ipv6?: boolean; want: ReturnType<typeof etcdProbeEndpoint> }[] =
    [
      { want: { host: "127.0.0.1", port: 2381, scheme: "HTTP" } },
      { ipv6: true, want: { host: "::1", port: 2381, scheme: "HTTP" } },
      {
        metrics: "https://10.0.0.4:2382,http://127.0.0.1:2381",
        want: { host: "10.0.0.4", port: 2382, scheme: "HTTPS" },
      },
      { metrics: "http://[fd00::4]:2390", want: { host: "fd00::4", port: 2390, scheme: "HTTP" } },
      { metrics: "http://:2390", want: { host: "127.0.0.1", port: 2390, scheme: "HTTP" } },
      { metrics: "http://10.0.0.4", want: { host: "10.0.0.4", port: 2381, scheme: "HTTP" } },
      { metrics: "http://10.0.0.4:99999", want: { host: "10.0.0.4", port: 2381, scheme: "HTTP" } },
      { metrics: "10.0.0.4:2390", want: { host: "127.0.0.1", port: 2381, scheme: "HTTP" } },
    ];
  for (const c of cases) {
    it(`${c.metrics ?? "(none)"}${c.ipv6 ? " on IPv6" : ""}`, () => {
      const args =
        c.metrics === undefined ? [] : [{ name: "listen-metrics-urls", value: c.metrics }];
      expect(etcdProbeEndpoint(args, c.ipv6 ?? false)).toEqual(c.want);
    });
  }

  it("declares the parsed port for the named probe", () => {
    const cfg = initConfig((c) => {
      c.cluster.etcd.local!.extraArgs = [
        { name: "listen-metrics-urls", value: "http://0.0.0.0:2390" },
      ];
    });
    const c = initEtcdPod(cfg, release135()).spec.containers[0]!;
    expect(c.ports).toEqual([{ name: "probe-port", containerPort: 2390, protocol: "TCP" }]);
    // kubeadm does not blank 0.0.0.0 for etcd (only the other components use getProbeAddress).
    expect(c.livenessProbe.httpGet.host).toBe("0.0.0.0");
  });
});
