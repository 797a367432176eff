import { execFileSync } from "node:child_process";
import { createDecipheriv, createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { relative } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listFiles } from "../../../src/cli/files.js";
import { opensslCAPin } from "../../support/ca-pin.js";
import { bundledCli, type CliResult } from "../../support/cli.js";
import {
  SIM_CERTIFICATE_KEY,
  SIM_TOKEN,
  simHost,
  type SimHost,
} from "../../support/sim-cluster.js";

// `kubeforge init` to the end: the bundled CLI on a test host whose kubelet, API server and
// controllers are the simulation in test/support/sim (etcd is the real one). What it checks is
// read back with kubectl (Go's client) and recomputed with node:crypto, not with kubeforge's code.

interface Obj {
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  };
  data?: Record<string, string>;
  spec?: { taints?: { key: string; effect: string }[] };
  subjects?: { kind: string; name: string }[];
  roleRef?: { name: string };
  rules?: { verbs: string[]; resources: string[]; resourceNames?: string[] }[];
}
interface List {
  items: (Obj & { kind: string })[];
}

let kubeforge: Awaited<ReturnType<typeof bundledCli>>["kubeforge"];
const hosts: SimHost[] = [];

async function newHost(o?: Parameters<typeof simHost>[0]): Promise<SimHost> {
  const h = await simHost(o);
  hosts.push(h);
  return h;
}

function init(h: SimHost, extra: string[] = []): Promise<CliResult> {
  return kubeforge(
    [
      "init",
      "--config",
      h.configFile,
      "--rootfs",
      h.rootfs,
      "--ignore-preflight-errors",
      "all",
      ...extra,
    ],
    { env: h.node.env },
  );
}

const b64 = (s: string) => Buffer.from(s, "base64");

/** kubeadm's DecryptBytes, recomputed: nonce (12) || ciphertext || tag (16), AES-256-GCM. */
function decrypt(value: string, hexKey: string): Buffer {
  const data = b64(value);
  const decipher = createDecipheriv(
    "aes-256-gcm",
    Buffer.from(hexKey, "hex"),
    data.subarray(0, 12),
  );
  decipher.setAuthTag(data.subarray(data.length - 16));
  return Buffer.concat([decipher.update(data.subarray(12, data.length - 16)), decipher.final()]);
}

/** cluster-bootstrap's detached JWS (HS256, kid = token id), recomputed. */
function detachedJWS(content: string, tokenID: string, secret: string): string {
  const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");
  const header = b64url(JSON.stringify({ alg: "HS256", kid: tokenID }));
  const mac = createHmac("sha256", secret)
    .update(`${header}.${b64url(content)}`)
    .digest();
  return `${header}..${b64url(mac)}`;
}

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
}, 120_000);

afterAll(async () => {
  for (const h of hosts) await h.stop();
});

describe("kubeforge init against the simulated control plane", () => {
  let host: SimHost;
  let first: CliResult;
  const [tokenID, tokenSecret] = SIM_TOKEN.split(".") as [string, string];

  beforeAll(async () => {
    host = await newHost();
    first = await init(host, ["--upload-certs"]);
    if (first.code !== 0) console.log(first.stderr, await host.node.logs());
  }, 180_000);

  it("reaches the end and prints the join commands on stdout", () => {
    expect(first.stderr).not.toMatch(/error execution phase/);
    expect(first.code).toBe(0);
    const caHash = opensslCAPin(host.path("etc/kubernetes/pki/ca.crt"));
    const endpoint = `${host.address}:${host.apiPort}`;
    expect(first.stdout).toContain("Your Kubernetes control-plane has initialized successfully!");
    expect(first.stdout).toContain(
      `kubeforge join ${endpoint} --token ${SIM_TOKEN} \\\n\t--discovery-token-ca-cert-hash sha256:${caHash} \\\n\t--control-plane --certificate-key ${SIM_CERTIFICATE_KEY}`,
    );
    expect(first.stdout).toContain(
      `kubeforge join ${endpoint} --token ${SIM_TOKEN} \\\n\t--discovery-token-ca-cert-hash sha256:${caHash} \n`,
    );
  });

  it("pulls the images of its static pods in preflight, through the node's runtime", async () => {
    expect(first.stderr).toContain(
      "[preflight] Pulling images required for setting up a Kubernetes cluster",
    );
    const manifests = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];
    for (const name of manifests) {
      const pod = load(
        await readFile(host.path(`etc/kubernetes/manifests/${name}.yaml`), "utf8"),
      ) as { spec: { containers: { image: string }[] } };
      const image = pod.spec.containers[0]!.image;
      // crictl as the node has it: the image is in the runtime.
      execFileSync(
        "crictl",
        ["--runtime-endpoint", "unix:///run/containerd/containerd.sock", "inspecti", "-q", image],
        { env: host.node.env, stdio: "ignore" },
      );
    }
  });

  it("creates every object kubeadm creates, with kubeadm's names, subjects and keys", async () => {
    const crbs = await host.kubectl<List>(["get", "clusterrolebindings"]);
    const binding = (name: string) => crbs.items.find((b) => b.metadata.name === name);
    const expectations: [string, string, string][] = [
      ["kubeadm:cluster-admins", "cluster-admin", "Group/kubeadm:cluster-admins"],
      [
        "kubeadm:kubelet-bootstrap",
        "system:node-bootstrapper",
        "Group/system:bootstrappers:kubeadm:default-node-token",
      ],
      [
        "kubeadm:node-autoapprove-bootstrap",
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        "Group/system:bootstrappers:kubeadm:default-node-token",
      ],
      [
        "kubeadm:node-autoapprove-certificate-rotation",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        "Group/system:nodes",
      ],
      [
        "kubeadm:get-nodes",
        "kubeadm:get-nodes",
        "Group/system:bootstrappers:kubeadm:default-node-token",
      ],
      ["kubeadm:node-proxier", "system:node-proxier", "ServiceAccount/kube-proxy"],
      ["system:coredns", "system:coredns", "ServiceAccount/coredns"],
    ];
    for (const [name, role, subject] of expectations) {
      const b = binding(name);
      expect(b, name).toBeDefined();
      expect(b!.roleRef!.name).toBe(role);
      expect(b!.subjects!.map((s) => `${s.kind}/${s.name}`)).toContain(subject);
    }

    const roles = await host.kubectl<List>(["get", "roles,rolebindings", "-A"]);
    const names = roles.items.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`);
    for (const [ns, name] of [
      ["kube-system", "kubeadm:nodes-kubeadm-config"],
      ["kube-system", "kubeadm:kubelet-config"],
      ["kube-system", "kubeadm:kubeadm-certs"],
      ["kube-system", "kube-proxy"],
      ["kube-public", "kubeadm:bootstrap-signer-clusterinfo"],
    ]) {
      expect(names).toContain(`Role/${ns}/${name}`);
      expect(names).toContain(`RoleBinding/${ns}/${name}`);
    }
    const clusterInfoBinding = roles.items.find(
      (o) => o.kind === "RoleBinding" && o.metadata.name === "kubeadm:bootstrap-signer-clusterinfo",
    );
    expect(clusterInfoBinding!.subjects).toEqual([
      expect.objectContaining({ kind: "User", name: "system:anonymous" }),
    ]);

    const cms = await host.kubectl<List>(["get", "configmaps", "-A"]);
    const cm = (ns: string, name: string) =>
      cms.items.find((o) => o.metadata.namespace === ns && o.metadata.name === name);
    const kubeadmConfig = load(cm("kube-system", "kubeadm-config")!.data!.ClusterConfiguration!);
    expect(kubeadmConfig).toMatchObject({
      apiVersion: "kubeadm.k8s.io/v1beta4",
      kind: "ClusterConfiguration",
      kubernetesVersion: "v1.35.0",
      controlPlaneEndpoint: `${host.address}:${host.apiPort}`,
    });
    const kubeletConfig = cm("kube-system", "kubelet-config")!;
    expect(load(kubeletConfig.data!.kubelet!)).toMatchObject({ kind: "KubeletConfiguration" });
    expect(Object.keys(cm("kube-system", "kube-proxy")!.data!).sort()).toEqual([
      "config.conf",
      "kubeconfig.conf",
    ]);
    expect(cm("kube-system", "coredns")!.data!.Corefile).toContain("kubernetes cluster.local");

    const workloads = await host.kubectl<List>([
      "get",
      "deployments,daemonsets,services",
      "-n",
      "kube-system",
    ]);
    expect(workloads.items.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      expect.arrayContaining(["Deployment/coredns", "DaemonSet/kube-proxy", "Service/kube-dns"]),
    );
    const dns = workloads.items.find((o) => o.metadata.name === "kube-dns") as unknown as {
      spec: { clusterIP: string };
    };
    expect(dns.spec.clusterIP).toBe("10.96.0.10");
  });

  it("stores the bootstrap token as kubeadm does", async () => {
    const secret = await host.kubectl<Obj & { type: string }>([
      "get",
      "secret",
      "-n",
      "kube-system",
      `bootstrap-token-${tokenID}`,
    ]);
    expect(secret.type).toBe("bootstrap.kubernetes.io/token");
    const data = Object.fromEntries(
      Object.entries(secret.data!).map(([k, v]) => [k, b64(v).toString()]),
    );
    expect(data).toMatchObject({
      "token-id": tokenID,
      "token-secret": tokenSecret,
      "usage-bootstrap-authentication": "true",
      "usage-bootstrap-signing": "true",
      "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
    });
    const expires = Date.parse(data.expiration!);
    expect(expires - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
  });

  it("labels and taints the node as a control plane", async () => {
    const node = await host.kubectl<Obj>(["get", "node", "cp-1"]);
    expect(node.metadata.labels).toMatchObject({
      "node-role.kubernetes.io/control-plane": "",
      "node.kubernetes.io/exclude-from-external-load-balancers": "",
    });
    expect(node.spec!.taints).toContainEqual({
      key: "node-role.kubernetes.io/control-plane",
      effect: "NoSchedule",
    });
  });

  it("publishes a cluster-info that verifies with the token's JWS and holds the cluster CA", async () => {
    const ci = await host.kubectl<Obj>(["get", "configmap", "-n", "kube-public", "cluster-info"]);
    const kubeconfig = ci.data!.kubeconfig!;
    expect(ci.data![`jws-kubeconfig-${tokenID}`]).toBe(
      detachedJWS(kubeconfig, tokenID, tokenSecret),
    );
    const parsed = load(kubeconfig) as {
      clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
    };
    expect(b64(parsed.clusters[0]!.cluster["certificate-authority-data"])).toEqual(
      await readFile(host.path("etc/kubernetes/pki/ca.crt")),
    );
    // Anonymous discovery, as a joining node does it.
    const anonymous = execFileSync("curl", [
      "-sk",
      `https://${host.address}:${host.apiPort}/api/v1/namespaces/kube-public/configmaps/cluster-info`,
    ]).toString();
    expect((JSON.parse(anonymous) as Obj).data!.kubeconfig).toBe(kubeconfig);
  });

  it("uploads certificates that decrypt with the certificate key to the original bytes", async () => {
    const secret = await host.kubectl<Obj>(["get", "secret", "-n", "kube-system", "kubeadm-certs"]);
    const files: Record<string, string> = {
      "ca.crt": "ca.crt",
      "ca.key": "ca.key",
      "front-proxy-ca.crt": "front-proxy-ca.crt",
      "front-proxy-ca.key": "front-proxy-ca.key",
      "sa.key": "sa.key",
      "sa.pub": "sa.pub",
      "etcd-ca.crt": "etcd/ca.crt",
      "etcd-ca.key": "etcd/ca.key",
    };
    expect(Object.keys(secret.data!).sort()).toEqual(Object.keys(files).sort());
    for (const [key, file] of Object.entries(files)) {
      expect(decrypt(secret.data![key]!, SIM_CERTIFICATE_KEY)).toEqual(
        await readFile(host.path(`etc/kubernetes/pki/${file}`)),
      );
    }
    // Owned by a 2-hour token that can neither authenticate nor sign.
    const owner = secret.metadata.ownerReferences![0]!;
    expect(owner).toMatchObject({ kind: "Secret", controller: true });
    const token = await host.kubectl<Obj>(["get", "secret", "-n", "kube-system", owner.name]);
    expect(token.metadata.uid).toBe(owner.uid);
    const keys = Object.keys(token.data!).sort();
    expect(keys).toEqual(["description", "expiration", "token-id", "token-secret"]);
  });

  it("points kubelet.conf at the kubelet's rotating client certificate", async () => {
    const conf = load(await readFile(host.path("etc/kubernetes/kubelet.conf"), "utf8")) as {
      users: { name: string; user: Record<string, string> }[];
    };
    const pem = "/var/lib/kubelet/pki/kubelet-client-current.pem";
    expect(conf.users).toEqual([
      { name: "system:node:cp-1", user: { "client-certificate": pem, "client-key": pem } },
    ]);
  });

  describe("run again on the finished node", () => {
    let files: Map<string, string>;
    let objects: Map<string, string>;
    let second: CliResult;

    const snapshotFiles = async () => {
      const out = new Map<string, string>();
      for (const f of await listFiles(host.path("etc/kubernetes"))) {
        out.set(relative(host.rootfs, f), (await readFile(f)).toString("base64"));
      }
      return out;
    };
    const snapshotObjects = async () => {
      const list = await host.kubectl<List>([
        "get",
        "configmaps,secrets,roles,rolebindings,clusterroles,clusterrolebindings,serviceaccounts,services,deployments,daemonsets",
        "-A",
      ]);
      // What init owns: everything but the status controllers keep writing (the simulated
      // deployment and daemonset controllers update kube-proxy's and CoreDNS's status).
      return new Map(
        list.items.map((o) => {
          const { status: _status, ...owned } = o as typeof o & { status?: unknown };
          const {
            resourceVersion: _rv,
            managedFields: _mf,
            ...metadata
          } = o.metadata as typeof o.metadata & { managedFields?: unknown };
          return [
            `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`,
            JSON.stringify({ ...owned, metadata }),
          ];
        }),
      );
    };

    beforeAll(async () => {
      files = await snapshotFiles();
      objects = await snapshotObjects();
      second = await init(host);
    }, 120_000);

    it("succeeds and changes no node file and no object but the token's expiration", async () => {
      expect(second.stderr).not.toMatch(/error execution phase/);
      expect(second.code).toBe(0);
      expect(await snapshotFiles()).toEqual(files);
      const after = await snapshotObjects();
      const changed = [...after].filter(([k, o]) => objects.get(k) !== o).map(([k]) => k);
      expect(changed).toEqual([`Secret/kube-system/bootstrap-token-${tokenID}`]);
    });
  });

  describe("a cluster-info that belongs to another cluster", () => {
    it("is reported, not overwritten", async () => {
      const otherCA = execFileSync("sh", [
        "-c",
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout /dev/null -subj /CN=other -days 1 2>/dev/null",
      ]).toString();
      const foreign = [
        "apiVersion: v1",
        "clusters:",
        "- cluster:",
        `    certificate-authority-data: ${Buffer.from(otherCA).toString("base64")}`,
        `    server: https://${host.address}:${host.apiPort}`,
        '  name: ""',
        "contexts: null",
        'current-context: ""',
        "kind: Config",
        "users: null",
        "",
      ].join("\n");
      execFileSync("kubectl", [
        "--kubeconfig",
        host.path("etc/kubernetes/admin.conf"),
        "patch",
        "configmap",
        "-n",
        "kube-public",
        "cluster-info",
        "--type",
        "merge",
        "-p",
        JSON.stringify({ data: { kubeconfig: foreign } }),
      ]);
      const r = await kubeforge(
        ["init", "phase", "bootstrap-token", "--config", host.configFile, "--rootfs", host.rootfs],
        { env: host.node.env },
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /error execution phase bootstrap-token: ConfigMap kube-public\/cluster-info already exists with another cluster CA \(sha256:[0-9a-f]{64}\) than this cluster's \(sha256:[0-9a-f]{64}\)/,
      );
      const ci = await host.kubectl<Obj>(["get", "configmap", "-n", "kube-public", "cluster-info"]);
      expect(ci.data!.kubeconfig).toBe(foreign);
    });
  });
});

describe("kubeforge init when the API server never comes up", () => {
  let blocker: Server;

  afterAll(() => {
    blocker?.close();
  });

  it("fails at wait-control-plane naming the component, the timeout and what to look at", async () => {
    const host = await newHost({ timeouts: { controlPlaneComponentHealthCheck: "3s" } });
    // Something else holds the API server's port: the simulated kube-apiserver cannot bind it,
    // and whatever answers there is not an API server.
    blocker = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => blocker.listen(host.apiPort, host.address, resolve));
    const r = await init(host);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error execution phase wait-control-plane: .*kube-apiserver/s);
    expect(r.stderr).toMatch(/3s/);
    expect(r.stderr).toContain("crictl --runtime-endpoint");
    // The phases after it never ran: nothing was written to the API.
    expect(r.stderr).not.toContain("[upload-config]");
  }, 120_000);
});
