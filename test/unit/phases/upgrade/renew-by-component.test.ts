import { X509Certificate, createPublicKey } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { certsPhase } from "../../../../src/phases/init/certs.js";
import {
  renewCertsByComponent,
  type RenewalContext,
} from "../../../../src/phases/upgrade/renew.js";
import { KeyPool } from "../../../../src/pki/keys.js";
import type { FileWrite, Host } from "../../../../src/remote/host.js";
import {
  baseInitConfig,
  runPhase,
  tempRootHost,
  testInitData,
  testRelease,
} from "../../../support/init-fixtures.js";

// kubeadm's renewCertsByComponent (phases/upgrade/staticpods.go, v1.35) for kube-apiserver:
// apiserver, apiserver-kubelet-client, front-proxy-client and, with a local etcd,
// apiserver-etcd-client, each "Renewing <name> certificate" in that order, each with a new key
// (pkiutil.NewCertAndKey), and "External CA detected, <name> certificate can't be renewed"
// where the CA's key is absent (RenewUsingLocalCA returns false). A PKI made by `init phase
// certs` on a temporary root (ECDSA keys: quick to make, and the algorithm changes nothing
// here); the host counts the commands that write files.

const PKI = "etc/kubernetes/pki";
const APISERVER_CERTS = [
  "apiserver",
  "apiserver-kubelet-client",
  "front-proxy-client",
  "apiserver-etcd-client",
];

const cfg = () =>
  baseInitConfig({}, (c) => {
    c.cluster.encryptionAlgorithm = "ECDSA-P256";
  });

let root: string;
let cleanup: () => Promise<void>;
let writes: FileWrite[][];
let ctx: RenewalContext;
let lines: string[];

beforeEach(async () => {
  const made = await tempRootHost();
  root = made.root;
  cleanup = made.cleanup;
  await runPhase(certsPhase, testInitData(made.host, cfg()));
  writes = [];
  const host = Object.assign(Object.create(made.host) as Host, {
    writeFiles: async (files: readonly FileWrite[]) => {
      writes.push([...files]);
      for (const f of files) await made.host.writeFile(f.path, f.data, f.mode);
    },
  });
  ctx = {
    host,
    cfg: baseInitConfig(),
    release: testRelease(),
    keys: new KeyPool(),
    now: new Date(),
  };
  lines = [];
});
afterEach(() => cleanup());

const certPath = (name: string) => join(root, PKI, `${name}.crt`);
const read = (name: string) => readFile(certPath(name));
const renew = () => renewCertsByComponent(ctx, "kube-apiserver", (l) => lines.push(l));

describe("renewCertsByComponent for kube-apiserver", () => {
  it("renews its four certificates in kubeadm's order, each with a new key, in one command", async () => {
    const before = await Promise.all(APISERVER_CERTS.map(read));
    await renew();
    expect(lines).toEqual(
      APISERVER_CERTS.map((n) => `[upgrade/staticpods] Renewing ${n} certificate`),
    );
    expect(writes).toHaveLength(1);
    // Key before certificate, as kubeadm's WriteCertAndKey, in renewal order.
    expect(writes[0]!.map((f) => f.path)).toEqual(
      APISERVER_CERTS.flatMap((n) => [`/${PKI}/${n}.key`, `/${PKI}/${n}.crt`]),
    );
    for (const [i, name] of APISERVER_CERTS.entries()) {
      const old = new X509Certificate(before[i]!);
      const now = new X509Certificate(await read(name));
      expect(now.subject).toBe(old.subject);
      expect(now.publicKey.export({ format: "der", type: "spki" })).not.toEqual(
        old.publicKey.export({ format: "der", type: "spki" }),
      );
      const key = await readFile(join(root, PKI, `${name}.key`));
      expect(createPublicKey(key).export({ format: "der", type: "spki" })).toEqual(
        now.publicKey.export({ format: "der", type: "spki" }),
      );
    }
  });

  it("says an external CA's certificate can't be renewed and renews the others", async () => {
    await rm(join(root, PKI, "front-proxy-ca.key"));
    const frontProxy = await read("front-proxy-client");
    await renew();
    expect(lines).toEqual([
      "[upgrade/staticpods] Renewing apiserver certificate",
      "[upgrade/staticpods] Renewing apiserver-kubelet-client certificate",
      "[upgrade/staticpods] Renewing front-proxy-client certificate",
      "[upgrade/staticpods] External CA detected, front-proxy-client certificate can't be renewed",
      "[upgrade/staticpods] Renewing apiserver-etcd-client certificate",
    ]);
    expect(await read("front-proxy-client")).toEqual(frontProxy);
    expect(writes.flat().map((f) => f.path)).not.toContain(`/${PKI}/front-proxy-client.crt`);
  });

  it("throws the first failure in kubeadm's order after its lines, the others written", async () => {
    await rm(certPath("apiserver-kubelet-client"));
    const apiserver = await read("apiserver");
    const error = await renew().catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect(error!.message).toContain("apiserver-kubelet-client.crt");
    expect(lines).toEqual([
      "[upgrade/staticpods] Renewing apiserver certificate",
      "[upgrade/staticpods] Renewing apiserver-kubelet-client certificate",
    ]);
    expect(await read("apiserver")).not.toEqual(apiserver);
    expect(writes.flat().map((f) => f.path)).toContain(`/${PKI}/apiserver-etcd-client.crt`);
  });
});
