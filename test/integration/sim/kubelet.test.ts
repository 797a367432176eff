import { execFile } from "node:child_process";
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, writeFile } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { dump, load } from "js-yaml";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { getInitSystem } from "../../../src/node/init-system.js";
import { LocalHost } from "../../../src/remote/local.js";
import {
  SimulatedKubelet,
  simulatedNode,
  type SimulatedNode,
} from "../../support/sim/kubelet/index.js";

// The simulated kubelet (a test double, test/support/sim/kubelet) against real things: real
// etcd and etcdctl, openssl certificates, the fake API server it stands the kube-apiserver
// manifest up with, and kubeforge's own init-system module driving the systemctl shim.

const run = promisify(execFile);

/** The parts of API objects these tests read. */
interface Condition {
  type: string;
  status: string;
  reason?: string;
}
interface ApiObject {
  metadata: {
    name: string;
    uid?: string;
    generateName?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: unknown[];
  };
  spec: {
    username?: string;
    signerName?: string;
    usages?: string[];
    request?: string;
    nodeName?: string;
    taints?: unknown[];
  };
  status: {
    conditions?: Condition[];
    certificate?: string;
    addresses?: unknown[];
    phase?: string;
    podIP?: string;
  };
  items?: ApiObject[];
}
interface Kubeconfig {
  "current-context": string;
  clusters: unknown[];
  contexts: { name: string; context: Record<string, string> }[];
  users: { name: string; user: Record<string, string> }[];
}
const TIME_SCALE = 0.02;

const handedOut = new Set<number>();

/** A port nothing listens on, never the same twice in this file (the OS may reuse a closed one). */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.once("error", reject);
      s.listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** openssl-made PKI: a CA and leaf certificates signed by it (EC P-256). */
async function makeCA(dir: string, name: string) {
  await mkdir(dir, { recursive: true });
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    join(dir, `${name}.key`),
    "-out",
    join(dir, `${name}.crt`),
    "-subj",
    `/CN=${name}`,
    "-days",
    "2",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,digitalSignature",
  ]);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

async function makeLeaf(
  ca: { cert: string; key: string },
  dir: string,
  name: string,
  subject: string,
  ext: string,
) {
  await mkdir(dir, { recursive: true });
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const extFile = join(dir, `${name}.ext`);
  await writeFile(extFile, ext);
  await run("openssl", [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    key,
    "-out",
    csr,
    "-subj",
    subject,
  ]);
  await run("openssl", [
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    ca.cert,
    "-CAkey",
    ca.key,
    "-CAcreateserial",
    "-out",
    cert,
    "-days",
    "2",
    "-extfile",
    extFile,
  ]);
  return { cert, key };
}

function kubeletConfig(o: { healthzPort: number; staticPodPath?: string; rotate?: boolean }) {
  return dump({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    cgroupDriver: "systemd",
    healthzBindAddress: "127.0.0.1",
    healthzPort: o.healthzPort,
    rotateCertificates: o.rotate ?? true,
    ...(o.staticPodPath ? { staticPodPath: o.staticPodPath } : {}),
  });
}

function kubeconfig(server: string, caPem: string, user: Record<string, string>) {
  return dump({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "kubernetes",
        cluster: { server, "certificate-authority-data": Buffer.from(caPem).toString("base64") },
      },
    ],
    contexts: [{ name: "ctx", context: { cluster: "kubernetes", user: "u" } }],
    "current-context": "ctx",
    users: [{ name: "u", user }],
  });
}

async function writeNodeFile(rootfs: string, path: string, text: string, mode = 0o600) {
  await mkdir(join(rootfs, path, ".."), { recursive: true });
  await writeFile(join(rootfs, path), text, { mode });
}

/** A one-member etcd as a static pod, on free ports, with TLS from openssl. */
async function etcdManifest(rootfs: string, name: string) {
  const [client, peer, metrics] = [await freePort(), await freePort(), await freePort()];
  const pki = join(rootfs, "etc/kubernetes/pki/etcd");
  const ca = await makeCA(pki, "ca");
  await makeLeaf(
    ca,
    pki,
    "server",
    "/CN=etcd-server",
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
  );
  const hc = await makeLeaf(
    ca,
    pki,
    "healthcheck-client",
    "/O=system:masters/CN=kube-etcd-healthcheck-client",
    "extendedKeyUsage=clientAuth\n",
  );
  const peerURL = `http://127.0.0.1:${peer}`;
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "etcd",
      namespace: "kube-system",
      labels: { component: "etcd", tier: "control-plane" } as Record<string, string>,
    },
    spec: {
      hostNetwork: true,
      containers: [
        {
          name: "etcd",
          image: "registry.k8s.io/etcd:3.6.5-0",
          command: [
            "etcd",
            `--name=${name}`,
            "--data-dir=/var/lib/etcd",
            `--listen-client-urls=https://127.0.0.1:${client}`,
            `--advertise-client-urls=https://127.0.0.1:${client}`,
            `--listen-peer-urls=${peerURL}`,
            `--initial-advertise-peer-urls=${peerURL}`,
            `--initial-cluster=${name}=${peerURL}`,
            `--listen-metrics-urls=http://127.0.0.1:${metrics}`,
            "--cert-file=/etc/kubernetes/pki/etcd/server.crt",
            "--key-file=/etc/kubernetes/pki/etcd/server.key",
            "--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
            "--client-cert-auth=true",
            // etcd 3.6 names, as kubeadm ≥ 1.34 writes them; Debian's etcd 3.4 needs the old ones.
            "--feature-gates=InitialCorruptCheck=true",
            "--watch-progress-notify-interval=5s",
          ],
          volumeMounts: [
            { name: "etcd-data", mountPath: "/var/lib/etcd" },
            { name: "etcd-certs", mountPath: "/etc/kubernetes/pki/etcd" },
          ],
        },
      ],
      volumes: [
        {
          name: "etcd-certs",
          hostPath: { path: "/etc/kubernetes/pki/etcd", type: "DirectoryOrCreate" },
        },
        { name: "etcd-data", hostPath: { path: "/var/lib/etcd", type: "DirectoryOrCreate" } },
      ],
    },
  };
  const etcdctl = (...args: string[]) =>
    run(
      "etcdctl",
      [
        `--endpoints=https://127.0.0.1:${client}`,
        `--cacert=${ca.cert}`,
        `--cert=${hc.cert}`,
        `--key=${hc.key}`,
        "--dial-timeout=2s",
        "--command-timeout=3s",
        ...args,
      ],
      { env: { ...process.env, ETCDCTL_API: "3" } },
    );
  return { yaml: dump(pod), pod, etcdctl };
}

const etcdHealthy =
  (etcdctl: (...a: string[]) => Promise<{ stdout: string; stderr: string }>) => async () => {
    const r = await etcdctl("endpoint", "health");
    return `${r.stdout}${r.stderr}`.includes("is healthy");
  };

describe("simulated kubelet, in process", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function newRootfs() {
    const rootfs = await mkdtemp(join(tmpdir(), "kubeforge-simkubelet-"));
    cleanups.push(() => rm(rootfs, { recursive: true, force: true }));
    return rootfs;
  }

  async function startKubelet(rootfs: string, nodeName: string) {
    const lines: string[] = [];
    const kubelet = new SimulatedKubelet({
      rootfs,
      nodeName,
      log: (l) => lines.push(l),
      timeScale: TIME_SCALE,
    });
    cleanups.push(() => kubelet.stop());
    await kubelet.start();
    return { kubelet, lines };
  }

  /** A bootstrap kubeconfig whose server does not answer: enough for a kubelet to start. */
  async function unreachableBootstrap(rootfs: string) {
    const ca = await makeCA(join(rootfs, "tmp-ca"), "ca");
    const port = await freePort();
    await writeNodeFile(
      rootfs,
      "/etc/kubernetes/bootstrap-kubelet.conf",
      kubeconfig(`https://127.0.0.1:${port}`, await readFile(ca.cert, "utf8"), {
        token: "abcdef.0123456789abcdef",
      }),
    );
  }

  it("refuses to start without /var/lib/kubelet/config.yaml, as the kubelet does", async () => {
    const rootfs = await newRootfs();
    const kubelet = new SimulatedKubelet({ rootfs, nodeName: "n1", log: () => {} });
    await expect(kubelet.start()).rejects.toThrow(
      /failed to load Kubelet config file \/var\/lib\/kubelet\/config.yaml/,
    );
  });

  it("refuses to start without kubelet.conf or bootstrap-kubelet.conf", async () => {
    const rootfs = await newRootfs();
    await writeNodeFile(
      rootfs,
      "/var/lib/kubelet/config.yaml",
      kubeletConfig({ healthzPort: await freePort() }),
      0o644,
    );
    const kubelet = new SimulatedKubelet({ rootfs, nodeName: "n1", log: () => {} });
    await expect(kubelet.start()).rejects.toThrow(
      /unable to load bootstrap kubeconfig: stat \/etc\/kubernetes\/bootstrap-kubelet.conf: no such file/,
    );
  });

  it("refuses --node-labels in the kubernetes.io namespace that kubelets may not set", async () => {
    const rootfs = await newRootfs();
    await writeNodeFile(
      rootfs,
      "/var/lib/kubelet/config.yaml",
      kubeletConfig({ healthzPort: await freePort() }),
      0o644,
    );
    await writeNodeFile(
      rootfs,
      "/var/lib/kubelet/kubeadm-flags.env",
      'KUBELET_KUBEADM_ARGS="--node-labels=node-role.kubernetes.io/control-plane=,node.kubernetes.io/exclude-from-external-load-balancers="\n',
      0o644,
    );
    await unreachableBootstrap(rootfs);
    const kubelet = new SimulatedKubelet({ rootfs, nodeName: "n1", log: () => {} });
    await expect(kubelet.start()).rejects.toThrow(
      "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/control-plane]",
    );
  });

  it("serves healthz on healthzBindAddress:healthzPort from config.yaml", async () => {
    const rootfs = await newRootfs();
    const port = await freePort();
    await writeNodeFile(
      rootfs,
      "/var/lib/kubelet/config.yaml",
      kubeletConfig({ healthzPort: port }),
      0o644,
    );
    await unreachableBootstrap(rootfs);
    const { kubelet } = await startKubelet(rootfs, "n1");
    const res = await waitFor("healthz", async () => {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      return r.status === 200 ? r : undefined;
    });
    expect(await res.text()).toBe("ok");
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
    expect(kubelet.healthzURL).toBe(`http://127.0.0.1:${port}/healthz`);
    // With only a bootstrap kubeconfig and rotation on, kubelet.conf is written at once,
    // pointing at the certificate that does not exist yet.
    const conf = load(await readFile(join(rootfs, "etc/kubernetes/kubelet.conf"), "utf8")) as {
      users: { user: Record<string, string> }[];
      contexts: { name: string; context: Record<string, string> }[];
    };
    expect(conf.users[0]!.user).toEqual({
      "client-certificate": "/var/lib/kubelet/pki/kubelet-client-current.pem",
      "client-key": "/var/lib/kubelet/pki/kubelet-client-current.pem",
    });
    expect(conf.contexts[0]).toEqual({
      name: "default-context",
      context: { cluster: "default-cluster", namespace: "default", user: "default-auth" },
    });
  });

  it("runs the real etcd for etcd.yaml, restarts it when the manifest changes and stops it on removal", async () => {
    const rootfs = await newRootfs();
    await writeNodeFile(
      rootfs,
      "/var/lib/kubelet/config.yaml",
      kubeletConfig({ healthzPort: await freePort(), staticPodPath: "/etc/kubernetes/manifests" }),
      0o644,
    );
    await unreachableBootstrap(rootfs);
    const etcd = await etcdManifest(rootfs, "n1");
    await writeNodeFile(rootfs, "/etc/kubernetes/manifests/etcd.yaml", etcd.yaml);
    // A dot-file is not a manifest (file.go globs "[^.]*").
    await writeNodeFile(rootfs, "/etc/kubernetes/manifests/.etcd.yaml.swp", "garbage");
    const { kubelet } = await startKubelet(rootfs, "n1");

    await waitFor("etcd healthy", etcdHealthy(etcd.etcdctl), 30_000);
    await etcd.etcdctl("put", "/kubeforge/sim", "hello");
    expect((await etcd.etcdctl("get", "/kubeforge/sim", "--print-value-only")).stdout.trim()).toBe(
      "hello",
    );
    // hostPath volumes are the path mapping: the data went to the node's /var/lib/etcd.
    expect((await stat(join(rootfs, "var/lib/etcd/member"))).isDirectory()).toBe(true);
    const status = kubelet.status().pods;
    expect(status.map((p) => p.key)).toEqual(["kube-system/etcd-n1"]);
    const pid = status[0]!.pid!;
    expect(alive(pid)).toBe(true);
    // stdout/stderr go to the pod log, where the kubelet keeps it.
    const logDir = join(rootfs, "var/log/pods");
    const podDir = (await import("node:fs/promises").then((fs) => fs.readdir(logDir)))[0]!;
    expect(podDir).toMatch(/^kube-system_etcd-n1_[0-9a-f]{32}$/);
    expect(await readFile(join(logDir, podDir, "etcd", "0.log"), "utf8")).toMatch(
      / stderr F .*etcd/,
    );

    // A changed manifest is a new pod: the old process is stopped and a new one started.
    const changed = structuredClone(etcd.pod);
    changed.metadata.labels = { ...changed.metadata.labels, changed: "yes" };
    await writeNodeFile(rootfs, "/etc/kubernetes/manifests/etcd.yaml", dump(changed));
    const newPid = await waitFor("a new etcd", () => {
      const p = kubelet.status().pods[0];
      return p?.pid && p.pid !== pid ? p.pid : undefined;
    });
    expect(alive(pid)).toBe(false);
    await waitFor("etcd healthy again", etcdHealthy(etcd.etcdctl), 30_000);
    expect((await etcd.etcdctl("get", "/kubeforge/sim", "--print-value-only")).stdout.trim()).toBe(
      "hello",
    );

    await rm(join(rootfs, "etc/kubernetes/manifests/etcd.yaml"));
    await waitFor("etcd stopped", () => !alive(newPid));
    await expect(etcd.etcdctl("endpoint", "health")).rejects.toThrow();
    expect(kubelet.status().pods).toEqual([]);
  }, 90_000);
});

describe("simulated kubelet, TLS bootstrap and rotation against the fake API server it runs", () => {
  let rootfs: string;
  let kubelet: SimulatedKubelet;
  const others: SimulatedKubelet[] = [];
  let apiPort: number;
  let kcmPort: number;
  let schedPort: number;
  let caPem: string;
  let pki: string;
  let admin: { cert: string; key: string };
  const logs: string[] = [];
  const NODE = "cp-1";

  /** An HTTPS call to the API server as kubernetes-admin (system:masters). */
  function api(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: ApiObject }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = httpsRequest(
        `https://127.0.0.1:${apiPort}${path}`,
        {
          method,
          ca: caPem,
          cert: admin.cert,
          key: admin.key,
          headers: payload ? { "Content-Type": "application/json" } : {},
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString();
            let json = {} as ApiObject;
            try {
              json = JSON.parse(text) as ApiObject;
            } catch {
              /* not JSON */
            }
            resolve({ status: res.statusCode ?? 0, json });
          });
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  const insecureGet = (port: number, path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        `https://127.0.0.1:${port}${path}`,
        { rejectUnauthorized: false, agent: false },
        (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
      req.end();
    });

  function staticPod(name: string, command: string[]) {
    return dump({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: "kube-system",
        labels: { component: name, tier: "control-plane" },
      },
      spec: {
        hostNetwork: true,
        priorityClassName: "system-node-critical",
        containers: [
          {
            name,
            image: `registry.k8s.io/${name}:v1.35.0`,
            command,
            resources: { requests: { cpu: "100m" } },
            volumeMounts: [{ name: "k8s-certs", mountPath: "/etc/kubernetes/pki", readOnly: true }],
          },
        ],
        volumes: [
          {
            name: "k8s-certs",
            hostPath: { path: "/etc/kubernetes/pki", type: "DirectoryOrCreate" },
          },
        ],
      },
    });
  }

  beforeAll(async () => {
    rootfs = await mkdtemp(join(tmpdir(), "kubeforge-simkubelet-cp-"));
    pki = join(rootfs, "etc/kubernetes/pki");
    [apiPort, kcmPort, schedPort] = [await freePort(), await freePort(), await freePort()];
    const ca = await makeCA(pki, "ca");
    caPem = await readFile(ca.cert, "utf8");
    await makeLeaf(
      ca,
      pki,
      "apiserver",
      "/CN=kube-apiserver",
      "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    );
    const a = await makeLeaf(
      ca,
      join(rootfs, "admin"),
      "admin",
      "/O=system:masters/CN=kubernetes-admin",
      "extendedKeyUsage=clientAuth\n",
    );
    admin = { cert: await readFile(a.cert, "utf8"), key: await readFile(a.key, "utf8") };

    const manifests = "/etc/kubernetes/manifests";
    await writeNodeFile(
      rootfs,
      `${manifests}/kube-apiserver.yaml`,
      staticPod("kube-apiserver", [
        "kube-apiserver",
        "--advertise-address=127.0.0.1",
        "--bind-address=127.0.0.1",
        `--secure-port=${apiPort}`,
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--enable-bootstrap-token-auth=true",
        "--client-ca-file=/etc/kubernetes/pki/ca.crt",
        "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
        "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
        "--service-cluster-ip-range=10.96.0.0/12",
      ]),
    );
    await writeNodeFile(
      rootfs,
      `${manifests}/kube-controller-manager.yaml`,
      staticPod("kube-controller-manager", [
        "kube-controller-manager",
        "--bind-address=127.0.0.1",
        `--secure-port=${kcmPort}`,
        "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
        "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
        "--controllers=*,bootstrapsigner,tokencleaner",
        "--kubeconfig=/etc/kubernetes/controller-manager.conf",
        // At this file's time scale the default grace periods (50 s, 60 s) are 1 s and 1.2 s:
        // a kubelet slowed that long on a loaded machine would turn Unknown. 20 s each here.
        "--node-monitor-grace-period=1000s",
        "--node-startup-grace-period=1000s",
      ]),
    );
    await writeNodeFile(
      rootfs,
      `${manifests}/kube-scheduler.yaml`,
      staticPod("kube-scheduler", [
        "kube-scheduler",
        "--bind-address=127.0.0.1",
        `--secure-port=${schedPort}`,
        "--kubeconfig=/etc/kubernetes/scheduler.conf",
      ]),
    );
    await writeNodeFile(
      rootfs,
      "/var/lib/kubelet/config.yaml",
      kubeletConfig({ healthzPort: await freePort(), staticPodPath: manifests }),
      0o644,
    );
    await writeNodeFile(
      rootfs,
      "/var/lib/kubelet/kubeadm-flags.env",
      `KUBELET_KUBEADM_ARGS="--hostname-override=${NODE} --node-ip=127.0.0.1 --register-with-taints=example.com/sim=yes:NoSchedule --node-labels=example.com/role=test"\n`,
      0o644,
    );
    await writeNodeFile(
      rootfs,
      "/etc/kubernetes/bootstrap-kubelet.conf",
      kubeconfig(`https://127.0.0.1:${apiPort}`, caPem, { token: "abcdef.0123456789abcdef" }),
    );
    kubelet = new SimulatedKubelet({
      rootfs,
      nodeName: "machine-host",
      log: (l) => logs.push(l),
      timeScale: TIME_SCALE,
    });
    await kubelet.start();

    // What kubeadm's bootstrap-token phase creates (kubeadm: phases/bootstraptoken/node).
    await waitFor(
      "the fake API server",
      async () => (await api("GET", "/api/v1/namespaces/kube-system")).status === 200,
      30_000,
    );
    const rbac = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    const binding = (name: string, role: string, group: string) => ({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: group }],
    });
    const group = "system:bootstrappers:kubeadm:default-node-token";
    for (const [path, body] of [
      [rbac, binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group)],
      [
        rbac,
        binding(
          "kubeadm:node-autoapprove-bootstrap",
          "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
          group,
        ),
      ],
      [
        rbac,
        binding(
          "kubeadm:node-autoapprove-certificate-rotation",
          "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
          "system:nodes",
        ),
      ],
      [
        "/api/v1/namespaces/kube-system/secrets",
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "bootstrap-token-abcdef", namespace: "kube-system" },
          type: "bootstrap.kubernetes.io/token",
          data: Object.fromEntries(
            Object.entries({
              "token-id": "abcdef",
              "token-secret": "0123456789abcdef",
              "usage-bootstrap-authentication": "true",
              "usage-bootstrap-signing": "true",
              "auth-extra-groups": group,
            }).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
          ),
        },
      ],
    ] as const) {
      const r = await api("POST", path, body);
      expect([201, 409]).toContain(r.status);
    }
  }, 120_000);

  afterAll(async () => {
    if (process.env.SIM_KUBELET_DEBUG)
      await writeFile(process.env.SIM_KUBELET_DEBUG, logs.join("\n"));
    for (const k of others) await k.stop();
    await kubelet?.stop();
    if (rootfs) await rm(rootfs, { recursive: true, force: true });
  });

  const currentPem = (root: string) => join(root, "var/lib/kubelet/pki/kubelet-client-current.pem");

  it("bootstraps its client certificate from bootstrap-kubelet.conf as the kubelet does", async () => {
    await waitFor(
      "kubelet-client-current.pem",
      () => stat(currentPem(rootfs)).then(() => true),
      30_000,
    );
    const link = await lstat(currentPem(rootfs));
    expect(link.isSymbolicLink()).toBe(true);
    const target = await readlink(currentPem(rootfs));
    expect(basename(target)).toMatch(/^kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/);
    expect((await stat(target)).mode & 0o777).toBe(0o600);
    const pem = await readFile(target, "utf8");
    expect(pem).toMatch(/-----BEGIN CERTIFICATE-----[\s\S]*-----BEGIN EC PRIVATE KEY-----/);
    await writeFile(join(rootfs, "issued.crt"), pem);
    const verify = await run("openssl", [
      "verify",
      "-CAfile",
      join(pki, "ca.crt"),
      join(rootfs, "issued.crt"),
    ]);
    expect(verify.stdout).toContain("OK");
    const subject = (
      await run("openssl", [
        "x509",
        "-in",
        join(rootfs, "issued.crt"),
        "-noout",
        "-subject",
        "-nameopt",
        "RFC2253",
      ])
    ).stdout;
    // --hostname-override names the node, not the machine's host name.
    expect(subject.trim()).toBe(`subject=CN=system:node:${NODE},O=system:nodes`);

    // The CSR as client-go's certificate manager sends it, approved by csrapproving.
    const csrs =
      (await api("GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests")).json.items ??
      [];
    const csr = csrs.find((c) => c.spec.username === "system:bootstrap:abcdef")!;
    expect(csr.metadata.name).toMatch(/^csr-/);
    expect(csr.metadata.generateName).toBe("csr-");
    expect(csr.spec.signerName).toBe("kubernetes.io/kube-apiserver-client-kubelet");
    expect(csr.spec.usages).toEqual(["digital signature", "client auth"]);
    expect(csr.status.conditions!.map((c) => c.type)).toContain("Approved");

    const kubeconfigFile = join(rootfs, "etc/kubernetes/kubelet.conf");
    expect((await stat(kubeconfigFile)).mode & 0o777).toBe(0o600);
    const conf = load(await readFile(kubeconfigFile, "utf8")) as Kubeconfig;
    expect(conf["current-context"]).toBe("default-context");
    expect(conf.clusters).toEqual([
      {
        name: "default-cluster",
        cluster: {
          server: `https://127.0.0.1:${apiPort}`,
          "certificate-authority-data": Buffer.from(caPem).toString("base64"),
        },
      },
    ]);
    expect(conf.users[0]!.name).toBe("default-auth");
  }, 60_000);

  it("registers its Node with its labels, taints, addresses and conditions", async () => {
    const node = await waitFor(
      "the Node",
      async () => {
        const r = await api("GET", `/api/v1/nodes/${NODE}`);
        return r.status === 200 ? r.json : undefined;
      },
      30_000,
    );
    expect(node.metadata.labels).toMatchObject({
      "kubernetes.io/hostname": NODE,
      "kubernetes.io/os": "linux",
      "beta.kubernetes.io/os": "linux",
      "example.com/role": "test",
    });
    expect(node.metadata.labels!["kubernetes.io/arch"]).toBe(
      node.metadata.labels!["beta.kubernetes.io/arch"],
    );
    expect(node.spec.taints).toEqual([
      { key: "example.com/sim", value: "yes", effect: "NoSchedule" },
    ]);
    expect(node.status.addresses).toEqual([
      { type: "InternalIP", address: "127.0.0.1" },
      { type: "Hostname", address: NODE },
    ]);
    // No CNI configuration yet: NotReady, as every fresh kubeadm node.
    const ready = node.status.conditions!.find((c) => c.type === "Ready");
    expect(ready).toMatchObject({ status: "False", reason: "KubeletNotReady" });
    await mkdir(join(rootfs, "etc/cni/net.d"), { recursive: true });
    await writeFile(join(rootfs, "etc/cni/net.d/10-sim.conflist"), "{}");
    await waitFor("Ready", async () => {
      const n = (await api("GET", `/api/v1/nodes/${NODE}`)).json;
      return n.status.conditions?.find((c) => c.type === "Ready")?.status === "True";
    });
  }, 60_000);

  it("serves the controller-manager and scheduler health endpoints and creates mirror pods", async () => {
    expect(await insecureGet(kcmPort, "/healthz")).toEqual({ status: 200, body: "ok" });
    expect(await insecureGet(schedPort, "/livez")).toEqual({ status: 200, body: "ok" });
    expect((await insecureGet(schedPort, "/metrics")).status).toBe(403);
    const pods = await waitFor(
      "three mirror pods",
      async () => {
        const items = (await api("GET", "/api/v1/namespaces/kube-system/pods")).json.items ?? [];
        return items?.length === 3 ? items : undefined;
      },
      30_000,
    );
    const node = (await api("GET", `/api/v1/nodes/${NODE}`)).json;
    for (const name of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      const pod = pods.find((p) => p.metadata.name === `${name}-${NODE}`)!;
      expect(pod, name).toBeDefined();
      const a = pod.metadata.annotations!;
      expect(a["kubernetes.io/config.source"]).toBe("file");
      expect(a["kubernetes.io/config.mirror"]).toBe(a["kubernetes.io/config.hash"]);
      expect(pod.spec.nodeName).toBe(NODE);
      expect(pod.metadata.ownerReferences).toEqual([
        { apiVersion: "v1", kind: "Node", name: NODE, uid: node.metadata.uid, controller: true },
      ]);
    }
    await waitFor("mirror pod status Running", async () => {
      const p = (await api("GET", `/api/v1/namespaces/kube-system/pods/kube-scheduler-${NODE}`))
        .json;
      return p.status?.phase === "Running" && p.status.podIP === "127.0.0.1";
    });

    // Removing a manifest stops the component and deletes its mirror pod.
    await rm(join(rootfs, "etc/kubernetes/manifests/kube-scheduler.yaml"));
    await waitFor(
      "mirror pod deleted",
      async () =>
        (await api("GET", `/api/v1/namespaces/kube-system/pods/kube-scheduler-${NODE}`)).status ===
        404,
    );
    await expect(insecureGet(schedPort, "/livez")).rejects.toThrow();
  }, 60_000);

  it("rotates kubeadm's embedded kubelet.conf certificate out at once, with its own credentials", async () => {
    const worker = await mkdtemp(join(tmpdir(), "kubeforge-simkubelet-rot-"));
    try {
      const name = "cp-rot";
      const leaf = await makeLeaf(
        { cert: join(pki, "ca.crt"), key: join(pki, "ca.key") },
        join(worker, "tmp"),
        "kubelet",
        `/O=system:nodes/CN=system:node:${name}`,
        "extendedKeyUsage=clientAuth\n",
      );
      const embedded = await readFile(leaf.cert, "utf8");
      await writeNodeFile(
        worker,
        "/var/lib/kubelet/config.yaml",
        kubeletConfig({ healthzPort: await freePort() }),
        0o644,
      );
      await writeNodeFile(
        worker,
        "/var/lib/kubelet/kubeadm-flags.env",
        `KUBELET_KUBEADM_ARGS="--hostname-override=${name} --node-ip=127.0.0.1"\n`,
        0o644,
      );
      await writeNodeFile(
        worker,
        "/etc/kubernetes/kubelet.conf",
        kubeconfig(`https://127.0.0.1:${apiPort}`, caPem, {
          "client-certificate-data": Buffer.from(embedded).toString("base64"),
          "client-key-data": Buffer.from(await readFile(leaf.key, "utf8")).toString("base64"),
        }),
      );
      const k = new SimulatedKubelet({
        rootfs: worker,
        log: (l) => logs.push(l),
        timeScale: TIME_SCALE,
      });
      others.push(k);
      await k.start();
      // getCurrentCertificateOrBootstrap stored the embedded pair at once …
      const first = await readFile(currentPem(worker), "utf8");
      expect(first.startsWith(embedded.trim())).toBe(true);
      // … and the forced rotation replaced it with a certificate from a CSR the node made itself.
      const rotated = await waitFor(
        "a rotated certificate",
        async () => {
          const now = await readFile(currentPem(worker), "utf8");
          return now !== first ? now : undefined;
        },
        30_000,
      );
      expect(rotated).toContain("EC PRIVATE KEY");
      const csrs =
        (await api("GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests")).json.items ??
        [];
      expect(
        csrs.some((c) => c.spec.username === `system:node:${name}` && c.status.certificate),
      ).toBe(true);
      // kubelet.conf itself is left for kubeadm's kubelet-finalize to rewrite.
      expect(await readFile(join(worker, "etc/kubernetes/kubelet.conf"), "utf8")).toContain(
        "client-certificate-data",
      );
      await waitFor(
        "its Node",
        async () => (await api("GET", `/api/v1/nodes/${name}`)).status === 200,
        30_000,
      );
    } finally {
      await rm(worker, { recursive: true, force: true });
    }
  }, 60_000);

  it("bootstraps with rotateCertificates false through LoadClientCert (digested CSR name) before serving healthz", async () => {
    const worker = await mkdtemp(join(tmpdir(), "kubeforge-simkubelet-norot-"));
    try {
      const name = "worker-norot";
      const healthz = await freePort();
      await writeNodeFile(
        worker,
        "/var/lib/kubelet/config.yaml",
        kubeletConfig({ healthzPort: healthz, rotate: false }),
        0o644,
      );
      await writeNodeFile(
        worker,
        "/etc/kubernetes/bootstrap-kubelet.conf",
        kubeconfig(`https://127.0.0.1:${apiPort}`, caPem, { token: "abcdef.0123456789abcdef" }),
      );
      const k = new SimulatedKubelet({
        rootfs: worker,
        nodeName: name,
        log: (l) => logs.push(l),
        timeScale: TIME_SCALE,
      });
      others.push(k);
      await k.start(); // returns once the certificate is issued
      const conf = load(
        await readFile(join(worker, "etc/kubernetes/kubelet.conf"), "utf8"),
      ) as Kubeconfig;
      expect(conf.users[0]!.user["client-certificate"]).toBe(
        "/var/lib/kubelet/pki/kubelet-client-current.pem",
      );
      await expect(
        stat(join(worker, "var/lib/kubelet/pki/kubelet-client.key.tmp")),
      ).rejects.toThrow();
      const csrs =
        (await api("GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests")).json.items ??
        [];
      const csr = csrs.find((c) => c.metadata.name.startsWith("node-csr-"));
      expect(csr?.spec.usages).toEqual(["digital signature", "key encipherment", "client auth"]);
      expect(csr?.metadata.name).toMatch(/^node-csr-[A-Za-z0-9_-]{43}$/);
      await waitFor(
        "healthz",
        async () => (await fetch(`http://127.0.0.1:${healthz}/healthz`)).status === 200,
      );
    } finally {
      await rm(worker, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("systemctl shim", () => {
  let rootfs: string;
  let node: SimulatedNode;
  let etcd: Awaited<ReturnType<typeof etcdManifest>>;
  let healthzPort: number;

  beforeAll(async () => {
    rootfs = await mkdtemp(join(tmpdir(), "kubeforge-simkubelet-shim-"));
    healthzPort = await freePort();
    await writeNodeFile(
      rootfs,
      "/var/lib/kubelet/config.yaml",
      kubeletConfig({ healthzPort, staticPodPath: "/etc/kubernetes/manifests" }),
      0o644,
    );
    const ca = await makeCA(join(rootfs, "tmp-ca"), "ca");
    await writeNodeFile(
      rootfs,
      "/etc/kubernetes/bootstrap-kubelet.conf",
      kubeconfig(`https://127.0.0.1:${await freePort()}`, await readFile(ca.cert, "utf8"), {
        token: "abcdef.0123456789abcdef",
      }),
    );
    etcd = await etcdManifest(rootfs, "shim-node");
    await writeNodeFile(rootfs, "/etc/kubernetes/manifests/etcd.yaml", etcd.yaml);
    node = await simulatedNode({ rootfs, nodeName: "shim-node", timeScale: TIME_SCALE });
  }, 120_000);

  afterAll(async () => {
    await node?.stop();
    if (rootfs) await rm(rootfs, { recursive: true, force: true });
  });

  const systemctl = (...args: string[]) =>
    run("systemctl", args, { env: node.env }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({
        code: e.code,
        stdout: e.stdout,
        stderr: e.stderr,
      }),
    );

  it("answers as systemctl for units it knows and does not know", async () => {
    expect(await systemctl("is-active", "kubelet")).toMatchObject({
      code: 3,
      stdout: "inactive\n",
    });
    expect(await systemctl("is-enabled", "kubelet")).toMatchObject({
      code: 0,
      stdout: "enabled\n",
    });
    expect((await systemctl("status", "containerd")).stdout).toContain("Loaded: loaded");
    const unknown = await systemctl("status", "no-such-thing");
    expect(unknown.stdout).toContain("Loaded: not-found");
    expect(unknown.code).not.toBe(0);
    expect(await systemctl("is-active", "firewalld")).toMatchObject({
      code: 3,
      stdout: "inactive\n",
    });
    expect(await systemctl("daemon-reload")).toMatchObject({ code: 0 });
    expect(await systemctl("stop", "kubelet")).toMatchObject({ code: 0 }); // stopping a stopped unit
  });

  it("runs a unit kubeforge wrote from its ExecStart= line, and stops it", async () => {
    await writeNodeFile(
      rootfs,
      "/etc/systemd/system/kubeforge-test.service",
      "[Service]\nExecStart=/bin/sleep 300\n",
      0o644,
    );
    await writeNodeFile(
      rootfs,
      "/etc/systemd/system/kubeforge-broken.service",
      "[Service]\nExecStart=/bin/false\n",
      0o644,
    );
    expect((await systemctl("status", "kubeforge-test")).stdout).toContain("Loaded: loaded");
    expect(await systemctl("is-active", "kubeforge-test")).toMatchObject({ code: 3 });
    expect(await systemctl("restart", "kubeforge-test")).toMatchObject({ code: 0 });
    expect(await systemctl("is-active", "kubeforge-test")).toMatchObject({
      code: 0,
      stdout: "active\n",
    });
    expect(await systemctl("stop", "kubeforge-test")).toMatchObject({ code: 0 });
    expect(await systemctl("is-active", "kubeforge-test")).toMatchObject({ code: 3 });
    // A command that exits at once did not start.
    const broken = await systemctl("start", "kubeforge-broken");
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toContain("Job for kubeforge-broken.service failed");
  });

  it("is driven by kubeforge's init-system module: restart, is-active, stop", async () => {
    const host = new LocalHost({ rootfs, env: node.env });
    const init = await getInitSystem(host);
    expect(init?.name).toBe("systemd");
    expect(await init!.serviceExists("kubelet")).toBe(true);
    expect(await init!.serviceExists("no-such-thing")).toBe(false);
    expect(await init!.serviceIsEnabled("kubelet")).toBe(true);
    await init!.serviceRestart("kubelet");
    expect(await init!.serviceIsActive("kubelet")).toBe(true);
    expect((await systemctl("status", "kubelet")).stdout).toContain("Active: active (running)");
    const res = await waitFor(
      "healthz",
      async () => {
        const r = await fetch(`http://127.0.0.1:${healthzPort}/healthz`);
        return r.status === 200 ? r.text() : undefined;
      },
      30_000,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await node.logs()}`);
    });
    expect(res).toBe("ok");
    await waitFor("etcd healthy", etcdHealthy(etcd.etcdctl), 30_000);
    const children = JSON.parse(
      await readFile(join(node.paths.runtimeDir, "children.json"), "utf8"),
    ) as number[];
    const etcdPid = children[0]!;

    // Restarting the kubelet leaves its pods running, as containerd keeps containers.
    await init!.serviceRestart("kubelet");
    expect(await init!.serviceIsActive("kubelet")).toBe(true);
    await waitFor(
      "healthz after restart",
      async () => (await fetch(`http://127.0.0.1:${healthzPort}/healthz`)).status === 200,
      30_000,
    );
    expect(alive(etcdPid)).toBe(true);
    expect(
      JSON.parse(await readFile(join(node.paths.runtimeDir, "children.json"), "utf8")),
    ).toEqual([etcdPid]);

    await init!.serviceStop("kubelet");
    expect(await init!.serviceIsActive("kubelet")).toBe(false);
    await expect(fetch(`http://127.0.0.1:${healthzPort}/healthz`)).rejects.toThrow();
    expect(alive(etcdPid)).toBe(true);

    // Tearing the node down ends everything the kubelet started.
    await node.stop({ keepFiles: true });
    expect(alive(etcdPid)).toBe(false);
    await expect(etcd.etcdctl("endpoint", "health")).rejects.toThrow();
  }, 120_000);
});
