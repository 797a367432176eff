import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_HOST_PREFLIGHT_IGNORES_FLAG } from "../../support/preflight-ignores.js";
import {
  commandOf,
  createTestbed,
  netnsOf,
  type CliResult,
  type TestHost,
  type Testbed,
} from "../../support/testbed.js";

// The multi-host testbed, end to end: `kubeforge init` on one namespace host with kubeadm's
// default ports, `kubeforge join` of a worker on a second one. Checked from outside with kubectl,
// etcdctl, openssl and /proc, not with kubeforge's code.

const execFileAsync = promisify(execFile);
const TOKEN = "abcdef.0123456789abcdef";

/** Prints how a TCP connect to argv[1]:argv[2] ends (runs inside a namespace too). */
const CONNECT_SCRIPT = `
const s = require("node:net").connect({ host: process.argv[1], port: Number(process.argv[2]) });
s.setTimeout(3000, () => { console.log("TIMEOUT"); process.exit(0); });
s.on("connect", () => { console.log("CONNECTED"); process.exit(0); });
s.on("error", (e) => { console.log(e.code); process.exit(0); });
`;

function connectOutcome(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.setTimeout(3000, () => {
      s.destroy();
      resolve("TIMEOUT");
    });
    s.on("connect", () => {
      s.destroy();
      resolve("CONNECTED");
    });
    s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

let bed: Testbed;
let cp: TestHost;
let worker: TestHost;
let init: CliResult;

beforeAll(async () => {
  bed = await createTestbed(["tb-cp", "tb-worker"]);
  [cp, worker] = bed.hosts as [TestHost, TestHost];
  const config = join(cp.workDir, "kubeadm.yaml");
  // Everything but the address, token and name is kubeadm's default: ports 6443, 2379, 2380...
  await writeFile(
    config,
    [
      "apiVersion: kubeadm.k8s.io/v1beta4",
      "kind: InitConfiguration",
      "bootstrapTokens:",
      `- token: ${TOKEN}`,
      `localAPIEndpoint: {advertiseAddress: ${cp.address}}`,
      `nodeRegistration: {name: ${cp.name}}`,
      "---",
      "apiVersion: kubeadm.k8s.io/v1beta4",
      "kind: ClusterConfiguration",
      "kubernetesVersion: v1.35.0",
      "",
    ].join("\n"),
  );
  init = await cp.kubeforge([
    "init",
    "--config",
    config,
    "--rootfs",
    cp.rootfs,
    "--ignore-preflight-errors",
    TEST_HOST_PREFLIGHT_IGNORES_FLAG,
  ]);
  if (init.code !== 0) console.log(init.stderr, await cp.node.logs());
}, 120_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);

describe("a testbed of network-namespace hosts", () => {
  it("gives every host its own namespace and address, reachable from the root namespace", async () => {
    expect(cp.address).not.toBe(worker.address);
    expect(cp.netnsId).not.toBe(worker.netnsId);
    expect(cp.netnsId).not.toBe(netnsOf(process.pid));
    // A TCP connect to a closed port is refused (RST) only when the address is reachable.
    for (const h of bed.hosts) expect(await connectOutcome(h.address, 9)).toBe("ECONNREFUSED");
    const fromWorker = await worker.exec([process.execPath, "-e", CONNECT_SCRIPT, cp.address, "9"]);
    expect(fromWorker.stdout.trim()).toBe("ECONNREFUSED");
    const route = await worker.exec(["ip", "route", "get", cp.address]);
    expect(route.stdout).toContain("dev eth0");
  });

  it("resolves the hosts' names inside the namespaces, without touching the machine's files", async () => {
    const hostsBefore = await readFile("/etc/hosts", "utf8");
    const r = await worker.exec(["getent", "hosts", cp.name]);
    expect(r.stdout.trim().split(/\s+/)).toEqual([cp.address, cp.name]);
    // A name that is not a testbed host fails at once instead of waiting for a nameserver.
    const started = Date.now();
    const unknown = await cp.exec(["getent", "hosts", "no-such-host.invalid"]);
    expect(unknown.code).not.toBe(0);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await readFile("/etc/hosts", "utf8")).toBe(hostsBefore);
    expect(hostsBefore).not.toContain(cp.address);
  });

  it("runs kubeforge init to the end with kubeadm's default ports", () => {
    expect(init.stderr).not.toMatch(/error execution phase/);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain(`kubeforge join ${cp.address}:6443 --token ${TOKEN}`);
  });

  it("keeps the node's daemons, and the etcd they run, inside the host's namespace", async () => {
    const daemons = await cp.daemonPids();
    const inNs = await cp.netnsPids();
    const pids = [daemons.kubelet, daemons.runtime, ...daemons.containers];
    expect(daemons.kubelet).toBeDefined();
    expect(daemons.runtime).toBeDefined();
    const etcd = daemons.containers.filter((p) => commandOf(p) === "etcd");
    expect(etcd).toHaveLength(1);
    for (const pid of pids) {
      expect(netnsOf(pid!), `pid ${pid} (${commandOf(pid!)})`).toBe(cp.netnsId);
      expect(inNs).toContain(pid);
    }
    // The fixed ports are bound inside the namespace: etcd on 2379/2380, the simulated API
    // server on 6443, the kubelet's healthz on 10248.
    const ss = await cp.exec(["ss", "-Htlnp"]);
    expect(ss.stdout).toMatch(new RegExp(`127\\.0\\.0\\.1:2379 .*pid=${etcd[0]},`));
    expect(ss.stdout).toMatch(new RegExp(`${cp.address.replace(/\./g, "\\.")}:2380 .*"etcd"`));
    expect(ss.stdout).toMatch(/:6443 /);
    expect(ss.stdout).toMatch(/127\.0\.0\.1:10248 /);
  });

  it("lists the control-plane Node with kubectl from the root namespace", async () => {
    const nodes = await bed.kubectl<{ items: { metadata: { name: string } }[] }>(cp, [
      "get",
      "nodes",
    ]);
    expect(nodes.items.map((n) => n.metadata.name)).toContain(cp.name);
  });

  it("has a healthy etcd inside the host, over TLS with the certificates init generated", async () => {
    const pki = cp.path("etc/kubernetes/pki/etcd");
    const r = await cp.exec([
      "etcdctl",
      "--endpoints=https://127.0.0.1:2379",
      `--cacert=${pki}/ca.crt`,
      `--cert=${pki}/healthcheck-client.crt`,
      `--key=${pki}/healthcheck-client.key`,
      "--dial-timeout=5s",
      "endpoint",
      "health",
    ]);
    expect(r.stdout + r.stderr).toMatch(/https:\/\/127\.0\.0\.1:2379 is healthy/);
    expect(r.code).toBe(0);
  });

  describe("a worker host joining", () => {
    let joined: CliResult;

    beforeAll(async () => {
      const hash = await bed.caCertHash(cp);
      joined = await worker.kubeforge([
        "join",
        `${cp.address}:6443`,
        "--token",
        TOKEN,
        "--discovery-token-ca-cert-hash",
        `sha256:${hash}`,
        "--node-name",
        worker.name,
        "--rootfs",
        worker.rootfs,
        "--ignore-preflight-errors",
        TEST_HOST_PREFLIGHT_IGNORES_FLAG,
      ]);
      if (joined.code !== 0) console.log(joined.stderr, await worker.node.logs());
    }, 90_000);

    it("succeeds with the kubelet on its own default healthz port", async () => {
      expect(joined.stderr).not.toMatch(/error execution phase/);
      expect(joined.code).toBe(0);
      expect(joined.stdout).toContain("This node has joined the cluster:");
      const config = load(await readFile(worker.path("var/lib/kubelet/config.yaml"), "utf8")) as {
        healthzPort?: number;
      };
      expect(config.healthzPort ?? 10248).toBe(10248);
      for (const h of [cp, worker]) {
        const r = await h.exec(["ss", "-Htln", "sport", "= :10248"]);
        expect(r.stdout, h.name).toContain("127.0.0.1:10248");
      }
      const daemons = await worker.daemonPids();
      expect(netnsOf(daemons.kubelet!)).toBe(worker.netnsId);
    });

    it("ends with a kubelet.conf client certificate the cluster CA signed for the node", async () => {
      const conf = load(await readFile(worker.path("etc/kubernetes/kubelet.conf"), "utf8")) as {
        users: { user: Record<string, string> }[];
      };
      const cert = worker.path(conf.users[0]!.user["client-certificate"]!);
      const { stdout } = await execFileAsync("openssl", [
        "verify",
        "-CAfile",
        cp.path("etc/kubernetes/pki/ca.crt"),
        cert,
      ]);
      expect(stdout).toContain(": OK");
      const subject = await execFileAsync("openssl", ["x509", "-noout", "-subject", "-in", cert]);
      expect(subject.stdout).toMatch(new RegExp(`CN\\s*=\\s*system:node:${worker.name}`));
    });

    it("is registered as a Node of the cluster", async () => {
      const node = await bed.kubectl<{ metadata: { name: string } }>(cp, [
        "get",
        "node",
        worker.name,
      ]);
      expect(node.metadata.name).toBe(worker.name);
    });
  });

  describe("stop", () => {
    it("ends every process of the hosts and removes namespaces, links and folders", async () => {
      const pids = [
        ...(await cp.netnsPids()),
        ...(await worker.netnsPids()),
        ...Object.values(await cp.daemonPids()).flat(),
      ] as number[];
      expect(pids.length).toBeGreaterThan(3);
      await bed.stop();
      const alive = pids.filter((pid) => netnsOf(pid) !== undefined);
      expect(alive).toEqual([]);
      const namespaces = (await execFileAsync("ip", ["netns", "list"])).stdout;
      for (const h of bed.hosts) expect(namespaces).not.toContain(h.ns);
      const links = (await execFileAsync("ip", ["-o", "link", "show"])).stdout;
      expect(links).not.toMatch(new RegExp(`\\b${bed.bridge}\\b`));
      expect(links).not.toContain(`${bed.bridge}v`);
      for (const h of bed.hosts) {
        await expect(readFile(h.path("etc/kubernetes/kubelet.conf"))).rejects.toThrow(/ENOENT/);
        await expect(readFile(h.node.paths.kubeletPidFile)).rejects.toThrow(/ENOENT/);
      }
    }, 60_000);
  });
});
