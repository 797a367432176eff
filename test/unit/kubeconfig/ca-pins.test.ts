import { describe, expect, it } from "vitest";
import { caPinsOf } from "../../../src/kubeconfig/ca-pins.js";
import type { KubeConfig } from "../../../src/kubeconfig/types.js";
import {
  TEST_CERT2_PEM,
  TEST_CERT2_PIN,
  TEST_CERT_PEM,
  TEST_CERT_PIN,
} from "../pki/pubkeypin-fixtures.js";

// The pins a join command carries: every CA in admin.conf's current cluster, as kubeadm's
// show-join-command computes them (known answers from kubeadm's pubkeypin tests).

function adminConf(caPEM: string, current = "kubernetes-admin@kubernetes"): KubeConfig {
  const b64 = Buffer.from(caPEM).toString("base64");
  return {
    apiVersion: "v1",
    kind: "Config",
    "current-context": current,
    clusters: [
      { name: "other", cluster: { server: "https://x:6443", "certificate-authority-data": "" } },
      {
        name: "kubernetes",
        cluster: { server: "https://10.0.0.10:6443", "certificate-authority-data": b64 },
      },
    ],
    contexts: [
      {
        name: "kubernetes-admin@kubernetes",
        context: { cluster: "kubernetes", user: "kubernetes-admin" },
      },
    ],
    users: [{ name: "kubernetes-admin", user: {} }],
  } as unknown as KubeConfig;
}

describe("caPinsOf", () => {
  it("pins the current cluster's CA", () => {
    expect(caPinsOf(adminConf(TEST_CERT_PEM), "admin.conf")).toEqual([TEST_CERT_PIN]);
  });

  it("pins every CA of a bundle, in order", () => {
    expect(caPinsOf(adminConf(`${TEST_CERT2_PEM}\n${TEST_CERT_PEM}`), "admin.conf")).toEqual([
      TEST_CERT2_PIN,
      TEST_CERT_PIN,
    ]);
  });

  it("refuses a kubeconfig without a CA, naming the file", () => {
    expect(() => caPinsOf(adminConf(""), "cp-1:/etc/kubernetes/admin.conf")).toThrow(
      "cp-1:/etc/kubernetes/admin.conf holds no CA certificate to pin the join command to",
    );
  });

  it("refuses a current context that does not exist, naming the file", () => {
    expect(() => caPinsOf(adminConf(TEST_CERT_PEM, "nope"), "admin.conf")).toThrow(
      /CurrentContext.*admin\.conf/,
    );
  });
});
