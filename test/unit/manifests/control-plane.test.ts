import { describe, expect, it } from "vitest";
import type { InitConfig } from "../../../src/config/types.js";
import {
  authorizationModes,
  controlPlanePods,
  etcdCertDirs,
  type ControlPlaneOptions,
} from "../../../src/manifests/control-plane.js";
import { initEtcdPod } from "../../../src/manifests/etcd.js";
import { renderStaticPod, type Pod } from "../../../src/manifests/static-pod.js";
import { initConfig, release133, release135 } from "./fixtures.js";

const NONE: ControlPlaneOptions = { existingHostPaths: new Set(), proxyEnv: {}, externalCA: false };

function command(pod: Pod): string[] {
  return pod.spec.containers[0]!.command;
}

function flag(pod: Pod, name: string): string[] {
  return command(pod)
    .filter((a) => a.startsWith(`--${name}=`))
    .map((a) => a.slice(name.length + 3));
}

// Known answers: kubeadm's own TestGetAPIServerCommand (phases/controlplane/manifests_test.go),
// with its testCertsDir "/var/lib/certs" and ServiceSubnet "bar".
const C = "/var/lib/certs";
const COMMON_APISERVER = [
  "--enable-admission-plugins=NodeRestriction",
  `--service-account-key-file=${C}/sa.pub`,
  `--service-account-signing-key-file=${C}/sa.key`,
  "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
  `--client-ca-file=${C}/ca.crt`,
  `--tls-cert-file=${C}/apiserver.crt`,
  `--tls-private-key-file=${C}/apiserver.key`,
  `--kubelet-client-certificate=${C}/apiserver-kubelet-client.crt`,
  `--kubelet-client-key=${C}/apiserver-kubelet-client.key`,
  "--enable-bootstrap-token-auth=true",
  "--secure-port=123",
  "--allow-privileged=true",
  "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
  `--proxy-client-cert-file=${C}/front-proxy-client.crt`,
  `--proxy-client-key-file=${C}/front-proxy-client.key`,
  "--requestheader-username-headers=X-Remote-User",
  "--requestheader-group-headers=X-Remote-Group",
  "--requestheader-extra-headers-prefix=X-Remote-Extra-",
  `--requestheader-client-ca-file=${C}/front-proxy-ca.crt`,
  "--requestheader-allowed-names=front-proxy-client",
];
const LOCAL_ETCD_CERTS = [
  `--etcd-cafile=${C}/etcd/ca.crt`,
  `--etcd-certfile=${C}/apiserver-etcd-client.crt`,
  `--etcd-keyfile=${C}/apiserver-etcd-client.key`,
];

function kubeadmTestConfig(advertise: string, edit?: (c: InitConfig) => void): InitConfig {
  return initConfig((c) => {
    c.cluster.certificatesDir = C;
    c.cluster.networking.serviceSubnet = "bar";
    c.init.localAPIEndpoint = { advertiseAddress: advertise, bindPort: 123 };
    edit?.(c);
  });
}

describe("kube-apiserver command (kubeadm's TestGetAPIServerCommand cases)", () => {
  const cases: { name: string; cfg: InitConfig; expected: string[] }[] = [
    {
      name: "testing defaults",
      cfg: kubeadmTestConfig("1.2.3.4"),
      expected: [
        ...COMMON_APISERVER,
        "--service-cluster-ip-range=bar",
        "--authorization-mode=Node,RBAC",
        "--advertise-address=1.2.3.4",
        "--etcd-servers=https://127.0.0.1:2379",
        ...LOCAL_ETCD_CERTS,
      ],
    },
    {
      name: "ipv6 advertise address",
      cfg: kubeadmTestConfig("2001:db8::1"),
      expected: [
        ...COMMON_APISERVER,
        "--service-cluster-ip-range=bar",
        "--authorization-mode=Node,RBAC",
        "--advertise-address=2001:db8::1",
        "--etcd-servers=https://[::1]:2379",
        ...LOCAL_ETCD_CERTS,
      ],
    },
    {
      name: "an external etcd with custom ca, certs and keys",
      cfg: kubeadmTestConfig("2001:db8::1", (c) => {
        c.cluster.etcd = {
          external: {
            endpoints: ["https://[2001:abcd:bcda::1]:2379", "https://[2001:abcd:bcda::2]:2379"],
            caFile: "fuz",
            certFile: "fiz",
            keyFile: "faz",
          },
        };
      }),
      expected: [
        ...COMMON_APISERVER,
        "--service-cluster-ip-range=bar",
        "--authorization-mode=Node,RBAC",
        "--advertise-address=2001:db8::1",
        "--etcd-servers=https://[2001:abcd:bcda::1]:2379,https://[2001:abcd:bcda::2]:2379",
        "--etcd-cafile=fuz",
        "--etcd-certfile=fiz",
        "--etcd-keyfile=faz",
      ],
    },
    {
      name: "an insecure etcd",
      cfg: kubeadmTestConfig("2001:db8::1", (c) => {
        c.cluster.etcd = { external: { endpoints: ["http://[::1]:2379", "http://[::1]:2380"] } };
      }),
      expected: [
        ...COMMON_APISERVER,
        "--service-cluster-ip-range=bar",
        "--authorization-mode=Node,RBAC",
        "--advertise-address=2001:db8::1",
        "--etcd-servers=http://[::1]:2379,http://[::1]:2380",
      ],
    },
    {
      name: "test APIServer.ExtraArgs works as expected",
      cfg: kubeadmTestConfig("1.2.3.4", (c) => {
        c.cluster.apiServer.extraArgs = [
          { name: "service-cluster-ip-range", value: "baz" },
          { name: "advertise-address", value: "9.9.9.9" },
          { name: "audit-policy-file", value: "/etc/config/audit.yaml" },
          { name: "audit-log-path", value: "/var/log/kubernetes" },
        ];
      }),
      expected: [
        ...COMMON_APISERVER,
        "--service-cluster-ip-range=baz",
        "--authorization-mode=Node,RBAC",
        "--advertise-address=9.9.9.9",
        "--etcd-servers=https://127.0.0.1:2379",
        ...LOCAL_ETCD_CERTS,
        "--audit-policy-file=/etc/config/audit.yaml",
        "--audit-log-path=/var/log/kubernetes",
      ],
    },
    {
      name: "authorization-mode extra-args ABAC",
      cfg: kubeadmTestConfig("1.2.3.4", (c) => {
        c.cluster.apiServer.extraArgs = [{ name: "authorization-mode", value: "ABAC" }];
      }),
      expected: [
        ...COMMON_APISERVER,
        "--service-cluster-ip-range=bar",
        "--authorization-mode=ABAC",
        "--advertise-address=1.2.3.4",
        "--etcd-servers=https://127.0.0.1:2379",
        ...LOCAL_ETCD_CERTS,
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const pod = controlPlanePods(c.cfg, release135(), NONE)["kube-apiserver"];
      expect(command(pod)[0]).toBe("kube-apiserver");
      // kubeadm's test compares sorted lists; we also check we emit them sorted.
      expect(command(pod).slice(1)).toEqual([...c.expected].sort());
    });
  }
});

describe("kube-apiserver details", () => {
  it("filters unknown authorization modes and warns as kubeadm", () => {
    const warnings: string[] = [];
    expect(authorizationModes("Node,Foo,RBAC,Webhook", (m) => warnings.push(m))).toBe(
      "Node,RBAC,Webhook",
    );
    expect(warnings).toEqual([
      'ignoring unknown kube-apiserver authorization-mode "Foo"',
      'the default kube-apiserver authorization-mode is "Node,RBAC"; using "Node,RBAC,Webhook"',
    ]);
    expect(authorizationModes("Foo,Bar")).toBe("Node,RBAC");
    const quiet: string[] = [];
    expect(authorizationModes("Node,RBAC", (m) => quiet.push(m))).toBe("Node,RBAC");
    expect(quiet).toEqual([]);
  });

  it("drops --authorization-mode when a structured authorization config is given", () => {
    const cfg = initConfig((c) => {
      c.cluster.apiServer.extraArgs = [{ name: "authorization-config", value: "/etc/authz.yaml" }];
    });
    const pod = controlPlanePods(cfg, release135(), NONE)["kube-apiserver"];
    expect(flag(pod, "authorization-mode")).toEqual([]);
    expect(flag(pod, "authorization-config")).toEqual(["/etc/authz.yaml"]);
  });

  it("points etcd-servers at a local etcd advertise-client-urls override", () => {
    const cfg = initConfig((c) => {
      c.cluster.etcd.local!.extraArgs = [
        { name: "advertise-client-urls", value: "https://10.0.0.4:2379,https://10.0.0.5:2379" },
      ];
    });
    const pod = controlPlanePods(cfg, release135(), NONE)["kube-apiserver"];
    expect(flag(pod, "etcd-servers")).toEqual(["https://10.0.0.4:2379,https://10.0.0.5:2379"]);
  });

  it("keeps repeated extraArgs (v1beta4) sorted by value, replacing the default", () => {
    const cfg = initConfig((c) => {
      c.cluster.apiServer.extraArgs = [
        { name: "enable-admission-plugins", value: "PodSecurity" },
        { name: "enable-admission-plugins", value: "NodeRestriction" },
      ];
    });
    const pod = controlPlanePods(cfg, release135(), NONE)["kube-apiserver"];
    expect(command(pod).filter((a) => a.startsWith("--enable-admission-plugins="))).toEqual([
      "--enable-admission-plugins=NodeRestriction",
      "--enable-admission-plugins=PodSecurity",
    ]);
  });

  it("passes a dual-stack service range as given and annotates the bracketed IPv6 endpoint", () => {
    const cfg = initConfig((c) => {
      c.init.localAPIEndpoint = { advertiseAddress: "fd00::10", bindPort: 6443 };
      c.cluster.networking.serviceSubnet = "fd00:96::/108,10.96.0.0/16";
    });
    const pod = controlPlanePods(cfg, release135(), NONE)["kube-apiserver"];
    expect(flag(pod, "service-cluster-ip-range")).toEqual(["fd00:96::/108,10.96.0.0/16"]);
    expect(pod.metadata.annotations).toEqual({
      "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": "[fd00::10]:6443",
    });
    expect(pod.spec.containers[0]!.livenessProbe.httpGet.host).toBe("fd00::10");
  });
});

describe("kube-controller-manager command", () => {
  it("has kubeadm's defaults without a pod network", () => {
    const pod = controlPlanePods(initConfig(), release135(), NONE)["kube-controller-manager"];
    expect(command(pod)).toEqual([
      "kube-controller-manager",
      "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
      "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
      "--bind-address=127.0.0.1",
      "--client-ca-file=/etc/kubernetes/pki/ca.crt",
      "--cluster-name=kubernetes",
      "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
      "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
      "--controllers=*,bootstrapsigner,tokencleaner",
      "--kubeconfig=/etc/kubernetes/controller-manager.conf",
      "--leader-elect=true",
      "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
      "--root-ca-file=/etc/kubernetes/pki/ca.crt",
      "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
      "--use-service-account-credentials=true",
    ]);
  });

  it("allocates node CIDRs from a (dual-stack) pod network", () => {
    const cfg = initConfig((c) => {
      c.cluster.networking.podSubnet = "10.244.0.0/16,fd00:244::/56";
      c.cluster.networking.serviceSubnet = "10.96.0.0/16,fd00:96::/108";
    });
    const pod = controlPlanePods(cfg, release135(), NONE)["kube-controller-manager"];
    expect(flag(pod, "allocate-node-cidrs")).toEqual(["true"]);
    expect(flag(pod, "cluster-cidr")).toEqual(["10.244.0.0/16,fd00:244::/56"]);
    expect(flag(pod, "service-cluster-ip-range")).toEqual(["10.96.0.0/16,fd00:96::/108"]);
    expect(flag(pod, "node-cidr-mask-size")).toEqual([]);
  });

  it("passes empty cluster-signing files with an external CA", () => {
    const pod = controlPlanePods(initConfig(), release135(), { ...NONE, externalCA: true })[
      "kube-controller-manager"
    ];
    expect(command(pod)).toContain("--cluster-signing-cert-file=");
    expect(command(pod)).toContain("--cluster-signing-key-file=");
  });

  it("omits cluster-name when it is empty", () => {
    const cfg = initConfig((c) => (c.cluster.clusterName = ""));
    const pod = controlPlanePods(cfg, release135(), NONE)["kube-controller-manager"];
    expect(flag(pod, "cluster-name")).toEqual([]);
  });
});

describe("probes", () => {
  it("use numeric ports in 1.33 and the named probe-port with a declared port in 1.35", () => {
    const old = controlPlanePods(initConfig(), release133(), NONE);
    const cur = controlPlanePods(initConfig(), release135(), NONE);
    const expectations: [keyof typeof old, number][] = [
      ["kube-apiserver", 6443],
      ["kube-controller-manager", 10257],
      ["kube-scheduler", 10259],
    ];
    for (const [name, port] of expectations) {
      const a = old[name].spec.containers[0]!;
      const b = cur[name].spec.containers[0]!;
      expect(a.livenessProbe.httpGet.port).toBe(port);
      expect(a.ports).toBeUndefined();
      expect(b.livenessProbe.httpGet.port).toBe("probe-port");
      expect(b.startupProbe.httpGet.port).toBe("probe-port");
      expect(b.ports).toEqual([{ name: "probe-port", containerPort: port, protocol: "TCP" }]);
    }
  });

  it("follow kubeadm's paths, timings and hosts", () => {
    const pods = controlPlanePods(initConfig(), release135(), NONE);
    const api = pods["kube-apiserver"].spec.containers[0]!;
    expect(api.livenessProbe).toEqual({
      httpGet: { host: "10.0.0.4", path: "/livez", port: "probe-port", scheme: "HTTPS" },
      initialDelaySeconds: 10,
      timeoutSeconds: 15,
      periodSeconds: 10,
      failureThreshold: 8,
    });
    // ReadinessProbe's delay is 0, which core/v1 Probe's omitempty leaves out.
    expect(api.readinessProbe).toEqual({
      httpGet: { host: "10.0.0.4", path: "/readyz", port: "probe-port", scheme: "HTTPS" },
      timeoutSeconds: 15,
      periodSeconds: 1,
      failureThreshold: 3,
    });
    // 4m0s / 10s periods.
    expect(api.startupProbe.failureThreshold).toBe(24);
    expect(api.startupProbe.initialDelaySeconds).toBe(10);
    const kcm = pods["kube-controller-manager"].spec.containers[0]!;
    expect(kcm.readinessProbe).toBeUndefined();
    expect(kcm.livenessProbe.httpGet.path).toBe("/healthz");
    expect(kcm.livenessProbe.httpGet.host).toBe("127.0.0.1");
    expect(pods["kube-scheduler"].spec.containers[0]!.readinessProbe?.httpGet.path).toBe("/readyz");
  });

  it("scale the startup probe with controlPlaneComponentHealthCheck", () => {
    const cfg = initConfig((c) => (c.init.timeouts.controlPlaneComponentHealthCheck = "2m5s"));
    const pod = controlPlanePods(cfg, release135(), NONE)["kube-scheduler"];
    expect(pod.spec.containers[0]!.startupProbe.failureThreshold).toBe(13);
  });

  it("probe a bind-address extraArg, and no host at all for an unspecified address", () => {
    const cfg = initConfig((c) => {
      c.cluster.controllerManager.extraArgs = [{ name: "bind-address", value: "0.0.0.0" }];
      c.cluster.scheduler.extraArgs = [{ name: "bind-address", value: "10.0.0.4" }];
    });
    const pods = controlPlanePods(cfg, release135(), NONE);
    const kcm = pods["kube-controller-manager"].spec.containers[0]!;
    expect(kcm.livenessProbe.httpGet.host).toBeUndefined();
    expect(kcm.command).toContain("--bind-address=0.0.0.0");
    expect(pods["kube-scheduler"].spec.containers[0]!.livenessProbe.httpGet.host).toBe("10.0.0.4");
  });
});

describe("volumes", () => {
  it("mount kubeadm's host paths, sorted by name, CA trust dirs only where they exist", () => {
    const pods = controlPlanePods(initConfig(), release135(), {
      ...NONE,
      existingHostPaths: new Set(["/usr/share/ca-certificates", "/etc/ca-certificates"]),
    });
    const kcm = pods["kube-controller-manager"];
    expect(kcm.spec.volumes).toEqual([
      { name: "ca-certs", hostPath: { path: "/etc/ssl/certs", type: "DirectoryOrCreate" } },
      {
        name: "etc-ca-certificates",
        hostPath: { path: "/etc/ca-certificates", type: "DirectoryOrCreate" },
      },
      {
        name: "flexvolume-dir",
        hostPath: {
          path: "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
          type: "DirectoryOrCreate",
        },
      },
      { name: "k8s-certs", hostPath: { path: "/etc/kubernetes/pki", type: "DirectoryOrCreate" } },
      {
        name: "kubeconfig",
        hostPath: { path: "/etc/kubernetes/controller-manager.conf", type: "FileOrCreate" },
      },
      {
        name: "usr-share-ca-certificates",
        hostPath: { path: "/usr/share/ca-certificates", type: "DirectoryOrCreate" },
      },
    ]);
    expect(kcm.spec.containers[0]!.volumeMounts).toEqual([
      { name: "ca-certs", mountPath: "/etc/ssl/certs", readOnly: true },
      { name: "etc-ca-certificates", mountPath: "/etc/ca-certificates", readOnly: true },
      // Read-write: storage plugins talk to the controller-manager through sockets there.
      { name: "flexvolume-dir", mountPath: "/usr/libexec/kubernetes/kubelet-plugins/volume/exec" },
      { name: "k8s-certs", mountPath: "/etc/kubernetes/pki", readOnly: true },
      { name: "kubeconfig", mountPath: "/etc/kubernetes/controller-manager.conf", readOnly: true },
      {
        name: "usr-share-ca-certificates",
        mountPath: "/usr/share/ca-certificates",
        readOnly: true,
      },
    ]);
    expect(pods["kube-apiserver"].spec.volumes.map((v) => v.name)).toEqual([
      "ca-certs",
      "etc-ca-certificates",
      "k8s-certs",
      "usr-share-ca-certificates",
    ]);
    expect(pods["kube-scheduler"].spec.volumes).toEqual([
      {
        name: "kubeconfig",
        hostPath: { path: "/etc/kubernetes/scheduler.conf", type: "FileOrCreate" },
      },
    ]);
  });

  it("let extraVolumes replace a default of the same name and add new ones", () => {
    const cfg = initConfig((c) => {
      c.cluster.apiServer.extraVolumes = [
        { name: "ca-certs", hostPath: "/opt/certs", mountPath: "/etc/ssl/certs", readOnly: true },
        {
          name: "audit",
          hostPath: "/var/log/audit",
          mountPath: "/audit",
          pathType: "DirectoryOrCreate",
        },
      ];
    });
    const api = controlPlanePods(cfg, release135(), NONE)["kube-apiserver"];
    expect(api.spec.volumes).toEqual([
      { name: "audit", hostPath: { path: "/var/log/audit", type: "DirectoryOrCreate" } },
      // No pathType given: Go keeps the pointer to "" (type: "").
      { name: "ca-certs", hostPath: { path: "/opt/certs", type: "" } },
      { name: "k8s-certs", hostPath: { path: "/etc/kubernetes/pki", type: "DirectoryOrCreate" } },
    ]);
    expect(api.spec.containers[0]!.volumeMounts[0]).toEqual({ name: "audit", mountPath: "/audit" });
  });

  it("follow a flex-volume-plugin-dir extraArg", () => {
    const cfg = initConfig((c) => {
      c.cluster.controllerManager.extraArgs = [
        { name: "flex-volume-plugin-dir", value: "/opt/flex" },
      ];
    });
    const kcm = controlPlanePods(cfg, release135(), NONE)["kube-controller-manager"];
    expect(kcm.spec.volumes.find((v) => v.name === "flexvolume-dir")?.hostPath.path).toBe(
      "/opt/flex",
    );
  });

  it("mount external etcd cert dirs that no default mount covers", () => {
    expect(
      etcdCertDirs(
        {
          endpoints: [],
          caFile: "/etc/etcd/pki/ca.crt",
          certFile: "/etc/etcd/pki/client/c.crt",
          keyFile: "/srv/k.key",
        },
        "/etc/kubernetes/pki",
      ),
    ).toEqual(["/etc/etcd/pki", "/srv"]);
    expect(
      etcdCertDirs(
        {
          endpoints: [],
          caFile: "/etc/kubernetes/pki/etcd/ca.crt",
          certFile: "/etc/ssl/certs/c.crt",
          keyFile: "/etc/pki/tls/certs/k.key",
        },
        "/etc/kubernetes/pki",
      ),
    ).toEqual([]);
    const cfg = initConfig((c) => {
      c.cluster.etcd = {
        external: {
          endpoints: ["https://etcd:2379"],
          caFile: "/etc/etcd/ca.crt",
          certFile: "/etc/etcd/c.crt",
          keyFile: "/etc/etcd/c.key",
        },
      };
    });
    const api = controlPlanePods(cfg, release135(), NONE)["kube-apiserver"];
    expect(api.spec.volumes.find((v) => v.name === "etcd-certs-0")).toEqual({
      name: "etcd-certs-0",
      hostPath: { path: "/etc/etcd", type: "DirectoryOrCreate" },
    });
    expect(api.spec.containers[0]!.volumeMounts).toContainEqual({
      name: "etcd-certs-0",
      mountPath: "/etc/etcd",
      readOnly: true,
    });
  });
});

describe("pod shape", () => {
  it("is kubeadm's ComponentPod", () => {
    const pod = controlPlanePods(initConfig(), release135(), NONE)["kube-scheduler"];
    expect(pod.metadata).toEqual({
      name: "kube-scheduler",
      namespace: "kube-system",
      labels: { component: "kube-scheduler", tier: "control-plane" },
    });
    expect(pod.spec.hostNetwork).toBe(true);
    expect(pod.spec.priority).toBe(2000001000);
    expect(pod.spec.priorityClassName).toBe("system-node-critical");
    expect(pod.spec.securityContext).toEqual({ seccompProfile: { type: "RuntimeDefault" } });
    expect(pod.status).toEqual({});
    const c = pod.spec.containers[0]!;
    expect(c.image).toBe("registry.k8s.io/kube-scheduler:v1.35.0");
    expect(c.imagePullPolicy).toBe("IfNotPresent");
    expect(c.resources).toEqual({ requests: { cpu: "100m" } });
  });

  it("carries creationTimestamp: null only for releases whose kubeadm printed it", () => {
    const old = controlPlanePods(
      initConfig((c) => (c.cluster.kubernetesVersion = "v1.33.0")),
      release133(),
      NONE,
    );
    expect(old["kube-apiserver"].metadata.creationTimestamp).toBeNull();
    const cur = controlPlanePods(initConfig(), release135(), NONE);
    expect("creationTimestamp" in cur["kube-apiserver"].metadata).toBe(false);
  });

  it("uses the image repository and a tag safe for '+' in versions", () => {
    const cfg = initConfig((c) => {
      c.cluster.imageRepository = "mirror.example.com/k8s";
      c.cluster.kubernetesVersion = "v1.35.0+custom";
    });
    const pod = controlPlanePods(cfg, release135(), NONE)["kube-apiserver"];
    expect(pod.spec.containers[0]!.image).toBe(
      "mirror.example.com/k8s/kube-apiserver:v1.35.0_custom",
    );
  });

  it("merges the host's proxy variables with extraEnvs, extraEnvs winning", () => {
    const cfg = initConfig((c) => {
      c.cluster.apiServer.extraEnvs = [
        { name: "NO_PROXY", value: "10.0.0.0/8" },
        { name: "GOMAXPROCS", value: "2" },
      ];
    });
    const pods = controlPlanePods(cfg, release135(), {
      ...NONE,
      proxyEnv: {
        HTTPS_PROXY: "http://proxy:3128",
        no_proxy: "localhost",
        NO_PROXY: "x",
        HOME: "/root",
        http_proxy: "",
      },
    });
    expect(pods["kube-apiserver"].spec.containers[0]!.env).toEqual([
      { name: "GOMAXPROCS", value: "2" },
      { name: "HTTPS_PROXY", value: "http://proxy:3128" },
      { name: "NO_PROXY", value: "10.0.0.0/8" },
      { name: "no_proxy", value: "localhost" },
    ]);
    expect(pods["kube-scheduler"].spec.containers[0]!.env).toEqual([
      { name: "HTTPS_PROXY", value: "http://proxy:3128" },
      { name: "NO_PROXY", value: "x" },
      { name: "no_proxy", value: "localhost" },
    ]);
    // No proxy and no extraEnvs: Go omits the empty list.
    expect(
      controlPlanePods(initConfig(), release135(), NONE)["kube-scheduler"].spec.containers[0]!.env,
    ).toBeUndefined();
  });
});

describe("the readiness probe as kubeadm writes it", () => {
  // From a kubeadm node's /etc/kubernetes/manifests/kube-apiserver.yaml (named probe port, so
  // v1.34+), published as written: no initialDelaySeconds line.
  const KUBEADM_READINESS = `    readinessProbe:
      failureThreshold: 3
      httpGet:
        host: 10.0.0.4
        path: /readyz
        port: probe-port
        scheme: HTTPS
      periodSeconds: 1
      timeoutSeconds: 15
`;

  it("renders without initialDelaySeconds, for the API server, the scheduler and etcd", () => {
    const pods = controlPlanePods(initConfig(), release135(), NONE);
    expect(renderStaticPod(pods["kube-apiserver"])).toContain(KUBEADM_READINESS);
    for (const pod of [pods["kube-scheduler"], initEtcdPod(initConfig(), release135())]) {
      const text = renderStaticPod(pod);
      const readiness = text.slice(text.indexOf("readinessProbe:"), text.indexOf("resources:"));
      expect(readiness).toMatch(/periodSeconds: 1\n/);
      expect(readiness).not.toContain("initialDelaySeconds");
    }
  });
});
