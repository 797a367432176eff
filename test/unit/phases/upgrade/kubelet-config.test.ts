import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { UpgradeData } from "../../../../src/phases/upgrade/data.js";
import { upgradeKubeletConfigPhase } from "../../../../src/phases/upgrade/kubelet-config.js";
import {
  baseInitConfig,
  recordingLogger,
  tempRootHost,
  testRelease,
} from "../../../support/init-fixtures.js";

// The kubelet-config phase of `upgrade apply|node` (cmd/kubeadm/app/phases/upgrade/
// postupgrade.go WriteKubeletConfigFiles, v1.35): /var/lib/kubelet/config.yaml backed up into
// /etc/kubernetes/tmp/kubeadm-kubelet-config-<date>/config.yaml, then rewritten from the
// cluster's configuration with instance-config.yaml merged in (NodeLocalCRISocket). A node
// from before the gate has no instance-config.yaml: the --container-runtime-endpoint flag moves
// out of kubeadm-flags.env into a new instance-config.yaml, which the new config.yaml then holds.

const KUBELET = "var/lib/kubelet";
const FLAGS = `${KUBELET}/kubeadm-flags.env`;
const INSTANCE = `${KUBELET}/instance-config.yaml`;
const OLD_CONFIG = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n# old\n";

let root: string;
let cleanup: () => Promise<void>;
let data: UpgradeData;

beforeEach(async () => {
  const made = await tempRootHost();
  root = made.root;
  cleanup = made.cleanup;
  await mkdir(join(root, KUBELET), { recursive: true });
  await writeFile(join(root, KUBELET, "config.yaml"), OLD_CONFIG);
  const cfg = baseInitConfig({}, (c) => {
    c.cluster.featureGates = { ...c.cluster.featureGates, NodeLocalCRISocket: true };
  });
  const now = new Date("2026-11-29T10:11:12Z");
  data = {
    command: "node",
    host: made.host,
    cfg,
    release: testRelease(),
    dryRun: false,
    patchesDir: undefined,
    kubeletBackupParent: "/etc/kubernetes/tmp",
    now: () => now,
  } as unknown as UpgradeData;
});
afterEach(() => cleanup());

const run = async () => {
  const log = recordingLogger();
  await upgradeKubeletConfigPhase.run?.(data, { log } as never);
  return log;
};
const read = (p: string) => readFile(join(root, p), "utf8");
const endpointIn = async (p: string) =>
  (load(await read(p)) as { containerRuntimeEndpoint?: string }).containerRuntimeEndpoint;

describe("upgrade's kubelet-config phase", () => {
  it("backs up config.yaml and merges the existing instance-config.yaml into the new one", async () => {
    await writeFile(join(root, INSTANCE), 'containerRuntimeEndpoint: "unix:///run/x.sock"\n');
    const flags = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/y.sock"\n';
    await writeFile(join(root, FLAGS), flags);
    await run();
    const [backup] = await readdir(join(root, "etc/kubernetes/tmp"));
    expect(backup).toMatch(/^kubeadm-kubelet-config-2026-11-29-/);
    expect(await read(`etc/kubernetes/tmp/${backup}/config.yaml`)).toBe(OLD_CONFIG);
    expect(await endpointIn(`${KUBELET}/config.yaml`)).toBe("unix:///run/x.sock");
    // Nothing to move: kubeadm-flags.env is left as it was.
    expect(await read(FLAGS)).toBe(flags);
  });

  it("moves the runtime endpoint out of kubeadm-flags.env into a new instance-config.yaml", async () => {
    await writeFile(
      join(root, FLAGS),
      'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/y.sock --pod-infra-container-image=p"\n',
    );
    await run();
    expect(await endpointIn(INSTANCE)).toBe("unix:///run/y.sock");
    expect(await read(FLAGS)).not.toContain("container-runtime-endpoint");
    expect(await read(FLAGS)).toContain("--pod-infra-container-image=p");
    expect(await endpointIn(`${KUBELET}/config.yaml`)).toBe("unix:///run/y.sock");
  });

  it("writes into /var/lib/kubelet without making it again: the backup just read from it", async () => {
    const made: string[] = [];
    const mkdirp = data.host.mkdirp.bind(data.host);
    data.host.mkdirp = (path, mode) => {
      made.push(path);
      return mkdirp(path, mode);
    };
    await writeFile(
      join(root, FLAGS),
      'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/y.sock"\n',
    );
    await run();
    expect(await endpointIn(`${KUBELET}/config.yaml`)).toBe("unix:///run/y.sock");
    expect(made.filter((p) => p.startsWith("/var/lib/kubelet"))).toEqual([]);
  });
});
