// The join preflight phase's order, as kubeadm's cmd/phases/join/preflight.go runPreflight: the
// join node checks come from the JoinConfiguration alone and run before discovery; only then is
// the cluster's configuration read, and a control plane checks the cluster can take it.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultJoinConfig } from "../../../../src/config/join-defaults.js";
import { decodeConfigDocuments } from "../../../../src/config/load.js";
import type { InitConfig } from "../../../../src/config/types.js";
import { PreflightError } from "../../../../src/node/preflight/checks.js";
import type { JoinData } from "../../../../src/phases/join/data.js";
import { joinPreflightPhase } from "../../../../src/phases/join/preflight.js";
import { LocalHost } from "../../../../src/remote/local.js";
import { HostDouble } from "../../../support/host-double.js";
import { baseInitConfig, recordingLogger, testRelease } from "../../../support/init-fixtures.js";

let rootfs: string;
beforeEach(async () => {
  rootfs = await mkdtemp(join(tmpdir(), "kubeforge-join-preflight-"));
});
afterEach(async () => {
  await rm(rootfs, { recursive: true, force: true });
});

const TOKEN = "abcdef.0123456789abcdef";

interface Options {
  controlPlane?: boolean;
  certificateKey?: string;
  ignore?: string[];
  cluster?: InitConfig;
}

/** JoinData for a token-discovery join whose discovery is counted (and fails if `cluster` is absent). */
function joinData(o: Options = {}) {
  const docs = decodeConfigDocuments(
    [
      "apiVersion: kubeadm.k8s.io/v1beta4",
      "kind: JoinConfiguration",
      `discovery: {bootstrapToken: {token: ${TOKEN}, apiServerEndpoint: "10.0.0.4:6443", unsafeSkipCAVerification: true}}`,
      ...(o.controlPlane
        ? ["controlPlane: {localAPIEndpoint: {advertiseAddress: 10.0.0.21}}"]
        : []),
    ].join("\n"),
    "join.yaml",
  );
  const cfg = defaultJoinConfig(docs, { nodeName: "w-1", advertiseAddress: "10.0.0.21" });
  const discovery = { calls: 0 };
  const data = {
    cfg,
    // root, whatever user runs the tests: IsPrivilegedUser is not what is tested here
    host: new HostDouble(new LocalHost({ rootfs }), { facts: { uid: 0 } }),
    dryRun: false,
    ignorePreflightErrors: new Set(o.ignore ?? []),
    certificateKey: o.certificateKey,
    proxyEnv: {},
    now: () => new Date(),
    clusterConfig: () => {
      discovery.calls++;
      if (!o.cluster) return Promise.reject(new Error("discovery: the API server did not answer"));
      return Promise.resolve({ cfg: o.cluster, release: testRelease(35) });
    },
  } as unknown as JoinData;
  return { data, discovery };
}

async function run(data: JoinData) {
  const log = recordingLogger();
  await joinPreflightPhase.run!(data, { path: "preflight", log });
  return log;
}

describe("join preflight", () => {
  it("on a node that already joined, fails on kubelet.conf without attempting discovery", async () => {
    await mkdir(join(rootfs, "etc/kubernetes"), { recursive: true });
    await writeFile(join(rootfs, "etc/kubernetes/kubelet.conf"), "apiVersion: v1\n");
    const { data, discovery } = joinData();
    const error = await run(data).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PreflightError);
    expect((error as PreflightError).failures).toContainEqual({
      check: "FileAvailable--etc-kubernetes-kubelet.conf",
      message: "/etc/kubernetes/kubelet.conf already exists",
    });
    expect(discovery.calls).toBe(0);
  });

  it("reads the cluster's configuration once the join checks passed, for a worker too", async () => {
    const { data, discovery } = joinData({ ignore: ["all"], cluster: baseInitConfig() });
    const log = await run(data);
    expect(discovery.calls).toBe(1);
    expect(log.lines).not.toContain(
      "Running pre-flight checks before initializing the new control plane instance",
    );
  });

  it("a discovery failure ends the phase after the join checks", async () => {
    const { data, discovery } = joinData({ ignore: ["all"] });
    await expect(run(data)).rejects.toThrow("discovery: the API server did not answer");
    expect(discovery.calls).toBe(1);
  });

  it("refuses a control plane for a cluster without controlPlaneEndpoint, in kubeadm's words", async () => {
    const { data } = joinData({
      controlPlane: true,
      certificateKey: "0".repeat(64),
      ignore: ["all"],
      cluster: baseInitConfig(),
    });
    await expect(run(data)).rejects.toThrow(
      /^One or more conditions for hosting a new control plane instance is not satisfied\.\n\nunable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address\n\nPlease ensure that:\n/,
    );
  });

  it("without --certificate-key, refuses a control plane whose shared certificates are missing", async () => {
    const cluster = baseInitConfig({}, (c) => (c.cluster.controlPlaneEndpoint = "10.0.0.4:6443"));
    const { data } = joinData({ controlPlane: true, ignore: ["all"], cluster });
    await expect(run(data)).rejects.toThrow(
      /^One or more conditions for hosting a new control plane instance is not satisfied\.\n\n\[failure loading certificate for CA: couldn't load the certificate file \/etc\/kubernetes\/pki\/ca\.crt: open \/etc\/kubernetes\/pki\/ca\.crt: no such file or directory, /,
    );
  });
});
