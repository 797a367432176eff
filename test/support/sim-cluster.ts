import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { opensslCAPin } from "./ca-pin.js";
import type { CliResult } from "./cli.js";
import { freePorts } from "./ports.js";
import { simulatedNode, type SimulatedNode } from "./sim/kubelet/index.js";

// A control-plane test host for `kubeforge init` against the simulated control plane: a rootfs,
// the simulated kubelet behind a systemctl shim, and a kubeadm configuration whose every port is
// free on this machine (so test files can run side by side), the real etcd included.

const run = promisify(execFile);

export const SIM_TOKEN = "abcdef.0123456789abcdef";
export const SIM_CERTIFICATE_KEY = "0f".repeat(32);

/**
 * A global unicast IPv4 address of this machine: kubeadm refuses a loopback advertise address,
 * and the test host shares the machine's network (its ports are chosen free).
 */
export function machineAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  throw new Error("this machine has no non-loopback IPv4 address for the simulated API server");
}

export interface SimHostOptions {
  nodeName?: string;
  kubernetesVersion?: string;
  /** Extra InitConfiguration fields (YAML flow mappings, one per line). */
  timeouts?: { kubeletHealthCheck?: string; controlPlaneComponentHealthCheck?: string };
}

export interface SimHost {
  rootfs: string;
  node: SimulatedNode;
  /** The machine address the API server advertises. */
  address: string;
  apiPort: number;
  /** The port of the etcd it runs, on 127.0.0.1. */
  etcdClientPort: number;
  /** The kubeadm configuration file to pass to `kubeforge init --config`. */
  configFile: string;
  /** Absolute path of a node file. */
  path(p: string): string;
  /** kubectl with admin.conf, JSON output parsed. */
  kubectl<T = unknown>(args: string[]): Promise<T>;
  stop(): Promise<void>;
}

export async function simHost(o: SimHostOptions = {}): Promise<SimHost> {
  const nodeName = o.nodeName ?? "cp-1";
  const base = await mkdtemp(join(tmpdir(), "kubeforge-simhost-"));
  const rootfs = join(base, "rootfs");
  await mkdir(rootfs);
  const node = await simulatedNode({ rootfs, nodeName });
  const address = machineAddress();
  const [api, healthz, kcm, scheduler, etcdClient, etcdPeer, etcdMetrics] = await freePorts(7);
  const etcdArg = (name: string, value: string) => `    - {name: ${name}, value: "${value}"}`;
  const config = [
    "apiVersion: kubeadm.k8s.io/v1beta4",
    "kind: InitConfiguration",
    "bootstrapTokens:",
    `- token: ${SIM_TOKEN}`,
    `certificateKey: ${SIM_CERTIFICATE_KEY}`,
    `localAPIEndpoint: {advertiseAddress: ${address}, bindPort: ${api}}`,
    `nodeRegistration: {name: ${nodeName}}`,
    `timeouts: {kubeletHealthCheck: ${o.timeouts?.kubeletHealthCheck ?? "1m"}, controlPlaneComponentHealthCheck: ${o.timeouts?.controlPlaneComponentHealthCheck ?? "1m"}, kubernetesAPICall: 30s}`,
    "---",
    "apiVersion: kubeadm.k8s.io/v1beta4",
    "kind: ClusterConfiguration",
    `kubernetesVersion: ${o.kubernetesVersion ?? "v1.35.0"}`,
    `controlPlaneEndpoint: ${address}:${api}`,
    `controllerManager: {extraArgs: [{name: secure-port, value: "${kcm}"}]}`,
    `scheduler: {extraArgs: [{name: secure-port, value: "${scheduler}"}]}`,
    `apiServer: {extraArgs: [{name: etcd-servers, value: "https://127.0.0.1:${etcdClient}"}]}`,
    "etcd:",
    "  local:",
    "    extraArgs:",
    etcdArg("listen-client-urls", `https://127.0.0.1:${etcdClient}`),
    etcdArg("advertise-client-urls", `https://127.0.0.1:${etcdClient}`),
    etcdArg("listen-peer-urls", `https://127.0.0.1:${etcdPeer}`),
    etcdArg("initial-advertise-peer-urls", `https://127.0.0.1:${etcdPeer}`),
    etcdArg("initial-cluster", `${nodeName}=https://127.0.0.1:${etcdPeer}`),
    etcdArg("listen-metrics-urls", `http://127.0.0.1:${etcdMetrics}`),
    "---",
    "apiVersion: kubelet.config.k8s.io/v1beta1",
    "kind: KubeletConfiguration",
    `healthzPort: ${healthz}`,
    "",
  ].join("\n");
  const configFile = join(base, "kubeadm.yaml");
  await writeFile(configFile, config);
  const path = (p: string) => join(rootfs, p);
  return {
    rootfs,
    node,
    address,
    apiPort: api!,
    etcdClientPort: etcdClient!,
    configFile,
    path,
    kubectl: async <T>(args: string[]) => {
      const { stdout } = await run(
        "kubectl",
        ["--kubeconfig", path("etc/kubernetes/admin.conf"), ...args, "-o", "json"],
        { maxBuffer: 32 * 1024 * 1024 },
      );
      return JSON.parse(stdout) as T;
    },
    stop: async () => {
      await node.stop();
      await rm(base, { recursive: true, force: true });
    },
  };
}

/**
 * A simulated host with a control plane made by `kubeforge init --config <its file> --rootfs
 * <its rootfs>` plus `initArgs`, and the pin of its CA as openssl computes it (hex). Throws with
 * init's stderr when init fails; the caller stops the host.
 */
export async function initializedSimHost(
  kubeforge: (args: string[], opts?: { env?: NodeJS.ProcessEnv }) => Promise<CliResult>,
  initArgs: string[],
): Promise<{ cp: SimHost; caHash: string }> {
  const cp = await simHost();
  const init = await kubeforge(
    ["init", "--config", cp.configFile, "--rootfs", cp.rootfs, ...initArgs],
    { env: cp.node.env },
  );
  if (init.code !== 0) {
    await cp.stop();
    throw new Error(`init failed:\n${init.stderr}`);
  }
  return { cp, caHash: opensslCAPin(cp.path("etc/kubernetes/pki/ca.crt")) };
}
