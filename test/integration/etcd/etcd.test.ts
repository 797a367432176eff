import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareInit } from "../../../src/cluster/init.js";
import { parseYAMLDocuments } from "../../../src/config/yaml.js";
import { etcdCommand } from "../../../src/manifests/etcd.js";
import type { Pod } from "../../../src/manifests/static-pod.js";
import { LocalHost } from "../../../src/remote/local.js";
import { TerminalReporter } from "../../../src/workflow/reporter.js";
import { createNetNamespace, type NetNamespace } from "../../support/netns.js";

// Debian's real etcd, started with the certificates our certs phase generated and exactly the
// flags of the etcd.yaml our etcd phase wrote. The namespace gives the node its own address so
// the manifest's fixed ports and URLs are used unchanged. The only translation is the one the
// container runtime would do: hostPath volumes → the paths the container sees.
// Kubernetes v1.33 is used because its etcd (3.5.x) takes the --experimental-* flag names that
// Debian's etcd 3.4 also accepts.

const run = promisify(execFile);
const ADDRESS = "10.251.0.2";

describe("generated etcd manifest and certificates, with a real etcd", () => {
  let rootfs: string;
  let ns: NetNamespace;
  let etcd: ChildProcess;
  let etcdLog = "";
  let pki: string;

  const etcdctl = (cert: string, key: string, ...args: string[]) =>
    run(
      ns.exec[0]!,
      [
        ...ns.exec.slice(1),
        "etcdctl",
        `--endpoints=https://${ADDRESS}:2379,https://127.0.0.1:2379`,
        `--cacert=${pki}/etcd/ca.crt`,
        `--cert=${cert}`,
        `--key=${key}`,
        "--dial-timeout=3s",
        ...args,
      ],
      { env: { ...process.env, ETCDCTL_API: "3" } },
    );

  beforeAll(async () => {
    rootfs = await mkdtemp(join(tmpdir(), "kubeforge-etcd-"));
    pki = join(rootfs, "etc/kubernetes/pki");
    const prepared = await prepareInit({
      flags: {
        kubernetesVersion: "v1.33.0",
        apiserverAdvertiseAddress: ADDRESS,
        nodeName: "etcd-node",
      },
      host: new LocalHost({ rootfs }),
      dryRun: false,
      reporter: new TerminalReporter({ write: () => {} }),
      env: {},
      stdout: () => undefined,
    });
    await prepared.runner.run(prepared.data, { filterPhases: ["certs", "etcd"] });

    const manifest = await readFile(join(rootfs, "etc/kubernetes/manifests/etcd.yaml"), "utf8");
    const pod = parseYAMLDocuments(manifest, "etcd.yaml")[0] as Pod;
    const hostPathOf = new Map(pod.spec.volumes.map((v) => [v.name, v.hostPath.path]));
    const mounts = pod.spec.containers[0]!.volumeMounts.map((m) => ({
      inContainer: m.mountPath,
      onHost: join(rootfs, hostPathOf.get(m.name)!),
    }));
    const translate = (arg: string) => {
      const [flag, value] = arg.split(/=(.*)/s) as [string, string | undefined];
      const m =
        value &&
        mounts.find((x) => value === x.inContainer || value.startsWith(`${x.inContainer}/`));
      return m ? `${flag}=${m.onHost}${value.slice(m.inContainer.length)}` : arg;
    };
    const argv = etcdCommand(pod).map(translate);
    expect(argv[0]).toBe("etcd");

    ns = createNetNamespace("kf-etcd", [`${ADDRESS}/32`]);
    etcd = spawn(ns.exec[0]!, [...ns.exec.slice(1), ...argv], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    etcd.stdout!.on("data", (b: Buffer) => (etcdLog += b.toString()));
    etcd.stderr!.on("data", (b: Buffer) => (etcdLog += b.toString()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await etcdctl(
          `${pki}/etcd/healthcheck-client.crt`,
          `${pki}/etcd/healthcheck-client.key`,
          "endpoint",
          "health",
        );
        break;
      } catch (e) {
        if (etcd.exitCode !== null || Date.now() > deadline) {
          throw new Error(
            `etcd did not become healthy: ${(e as Error).message}\n${etcdLog.slice(-3000)}`,
            { cause: e },
          );
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    }
  }, 120_000);

  afterAll(async () => {
    etcd?.kill("SIGKILL");
    ns?.remove();
    if (rootfs) await rm(rootfs, { recursive: true, force: true });
  });

  it("answers endpoint health on every client URL with the healthcheck-client certificate", async () => {
    const { stdout, stderr } = await etcdctl(
      `${pki}/etcd/healthcheck-client.crt`,
      `${pki}/etcd/healthcheck-client.key`,
      "endpoint",
      "health",
    );
    const out = stdout + stderr;
    expect(out).toContain(`https://${ADDRESS}:2379 is healthy`);
    expect(out).toContain("https://127.0.0.1:2379 is healthy");
  });

  it("serves the API server's client certificate (apiserver-etcd-client): write and read a key", async () => {
    const cert = `${pki}/apiserver-etcd-client.crt`;
    const key = `${pki}/apiserver-etcd-client.key`;
    await etcdctl(cert, key, "put", "/registry/kubeforge-test", "hello");
    const { stdout } = await etcdctl(
      cert,
      key,
      "get",
      "/registry/kubeforge-test",
      "--print-value-only",
    );
    expect(stdout.trim()).toBe("hello");
  });

  it("runs as the single member named after the node, advertising the node's peer URL", async () => {
    const { stdout } = await etcdctl(
      `${pki}/etcd/healthcheck-client.crt`,
      `${pki}/etcd/healthcheck-client.key`,
      "member",
      "list",
      "-w",
      "json",
    );
    const members = (
      JSON.parse(stdout) as {
        members: { name: string; peerURLs: string[]; clientURLs: string[] }[];
      }
    ).members;
    expect(members).toHaveLength(1);
    expect(members[0]!.name).toBe("etcd-node");
    expect(members[0]!.peerURLs).toEqual([`https://${ADDRESS}:2380`]);
    expect(members[0]!.clientURLs).toEqual([`https://${ADDRESS}:2379`]);
  });

  it("refuses a client certificate of the cluster CA: etcd trusts only etcd/ca", async () => {
    await expect(
      etcdctl(
        `${pki}/apiserver-kubelet-client.crt`,
        `${pki}/apiserver-kubelet-client.key`,
        "get",
        "/registry/kubeforge-test",
      ),
    ).rejects.toThrow();
  });

  it("rejects a client certificate from another CA (client-cert-auth is on)", async () => {
    const other = await mkdtemp(join(tmpdir(), "kubeforge-other-ca-"));
    try {
      await run("openssl", [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=other-ca",
        "-days",
        "1",
        "-keyout",
        `${other}/ca.key`,
        "-out",
        `${other}/ca.crt`,
      ]);
      await run("openssl", [
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=intruder",
        "-keyout",
        `${other}/c.key`,
        "-out",
        `${other}/c.csr`,
      ]);
      await run("openssl", [
        "x509",
        "-req",
        "-in",
        `${other}/c.csr`,
        "-CA",
        `${other}/ca.crt`,
        "-CAkey",
        `${other}/ca.key`,
        "-CAcreateserial",
        "-days",
        "1",
        "-out",
        `${other}/c.crt`,
      ]);
      await expect(
        etcdctl(`${other}/c.crt`, `${other}/c.key`, "get", "/registry/kubeforge-test"),
      ).rejects.toThrow();
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
