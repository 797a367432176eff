import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { dump } from "js-yaml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { nodeNameFromKubeletConfig } from "../../../../src/phases/upgrade/cluster-config.js";
import type { LocalHost } from "../../../../src/remote/local.js";
import { tempRootHost } from "../../../support/init-fixtures.js";

// kubeadm's GetNodeNameFromKubeletConfig (cmd/kubeadm/app/util/config/cluster.go): the CN of
// kubelet.conf's client certificate without "system:node:" — embedded (client-certificate-data,
// as `init` writes it) or in the file it names (client-certificate, as kubelet-finalize points
// it at /var/lib/kubelet/pki/kubelet-client-current.pem). The usual file is read beside
// kubelet.conf; it must be used only when kubelet.conf names it. Certificates by openssl.

const ROTATED = "var/lib/kubelet/pki/kubelet-client-current.pem";

let host: LocalHost;
let root: string;
let cleanup: () => Promise<void>;

/** A self-signed certificate and its key for CN=system:node:<name>, as one PEM (the kubelet's). */
function nodePEM(name: string): string {
  const dir = join(root, "openssl");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/O=system:nodes/CN=system:node:${name}`,
      "-keyout",
      join(dir, "k.pem"),
      "-out",
      join(dir, "c.pem"),
    ],
    { stdio: "pipe" },
  );
  return execFileSync("cat", [join(dir, "c.pem"), join(dir, "k.pem")]).toString();
}

async function put(path: string, text: string): Promise<void> {
  await mkdir(join(root, path, ".."), { recursive: true });
  await writeFile(join(root, path), text);
}

async function kubeletConf(user: Record<string, string>): Promise<void> {
  await put(
    "etc/kubernetes/kubelet.conf",
    dump({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "kubernetes", cluster: { server: "https://10.0.0.1:6443" } }],
      users: [{ name: "default-auth", user }],
      contexts: [{ name: "default", context: { cluster: "kubernetes", user: "default-auth" } }],
      "current-context": "default",
    }),
  );
}

beforeEach(async () => {
  const made = await tempRootHost();
  root = made.root;
  cleanup = made.cleanup;
  host = made.host;
  await mkdir(join(root, "openssl"));
});
afterEach(() => cleanup());

describe("nodeNameFromKubeletConfig", () => {
  it("takes the embedded client certificate's CN", async () => {
    await put(ROTATED, nodePEM("rotated"));
    await kubeletConf({
      "client-certificate-data": Buffer.from(nodePEM("embedded")).toString("base64"),
    });
    expect(await nodeNameFromKubeletConfig(host)).toBe("embedded");
  });

  it("takes the CN of the rotated certificate kubelet.conf names", async () => {
    await put(ROTATED, nodePEM("cp-1"));
    await kubeletConf({ "client-certificate": `/${ROTATED}`, "client-key": `/${ROTATED}` });
    expect(await nodeNameFromKubeletConfig(host)).toBe("cp-1");
  });

  it("reads another file kubelet.conf names, not the usual one beside it", async () => {
    await put(ROTATED, nodePEM("rotated"));
    await put("etc/kubernetes/pki/node.pem", nodePEM("named"));
    await kubeletConf({
      "client-certificate": "/etc/kubernetes/pki/node.pem",
      "client-key": "/etc/kubernetes/pki/node.pem",
    });
    expect(await nodeNameFromKubeletConfig(host)).toBe("named");
  });

  it("names kubelet.conf when it is missing", async () => {
    await expect(nodeNameFromKubeletConfig(host)).rejects.toThrow(
      /failed to get node name from kubelet config: .*kubelet\.conf/,
    );
  });

  it("needs no certificate file at the usual place", async () => {
    await put("etc/kubernetes/pki/node.pem", nodePEM("named"));
    await kubeletConf({ "client-certificate": "/etc/kubernetes/pki/node.pem" });
    expect(await nodeNameFromKubeletConfig(host)).toBe("named");
  });
});
