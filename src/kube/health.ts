import { withHeartbeat, type HeartbeatOptions } from "../workflow/heartbeat.js";
import { formatGoDuration } from "../config/duration.js";
import { joinHostPort } from "../config/network.js";
import { describeNetworkFailure } from "./errors.js";
import { API_CALL_RETRY_INTERVAL_MS, poll, PollStoppedError, PollTimeoutError } from "./poll.js";
import type { ClusterAccess, KubeClient, KubeObject } from "./types.js";

// kubeadm v1.33+ waits (util/apiclient/wait.go, WaitForAllControlPlaneComponents GA): the
// kubelet's healthz, then each control-plane component's own health endpoint, in parallel,
// polled every 500 ms. Log lines and troubleshooting texts are kubeadm's.

export interface KubeletWaitOptions {
  /** http://<healthzBindAddress>:<healthzPort>/healthz. */
  url: string;
  /** timeouts.kubeletHealthCheck. */
  timeoutMs: number;
  intervalMs?: number;
  log: (line: string) => void;
}

/** kubeadm's kubeletFailMsg (wait.go). */
export const KUBELET_FAIL_HELP = `Unfortunately, an error has occurred, likely caused by:
	- The kubelet is not running
	- The kubelet is unhealthy due to a misconfiguration of the node in some way (required cgroups disabled)

If you are on a systemd-powered system, you can try to troubleshoot the error with the following commands:
	- 'systemctl status kubelet'
	- 'journalctl -xeu kubelet'`;

/** kubeadm's controlPlaneFailMsg (wait.go), for the node's CRI socket. */
export function controlPlaneFailHelp(criSocket: string): string {
  return `A control plane component may have crashed or exited when started by the container runtime.
To troubleshoot, list all containers using your preferred container runtimes CLI.
Here is one example how you may list all running Kubernetes containers by using crictl:
	- 'crictl --runtime-endpoint ${criSocket} ps -a | grep kube | grep -v pause'
	Once you have found the failing container, you can inspect its logs with:
	- 'crictl --runtime-endpoint ${criSocket} logs CONTAINERID'`;
}

// Each probe is bounded so one silent endpoint cannot outlive the wait.
const MAX_PROBE_MS = 10_000;

function probeTimeout(deadline: number): number {
  return Math.max(1, Math.min(MAX_PROBE_MS, deadline - Date.now()));
}

function since(start: number): string {
  return formatGoDuration(Date.now() - start);
}

/** kubeadm WaitForKubelet: GET the kubelet's healthz until it answers 200. */
export async function waitForKubelet(
  access: ClusterAccess,
  opts: KubeletWaitOptions,
): Promise<void> {
  const timeout = formatGoDuration(opts.timeoutMs);
  opts.log(
    `[kubelet-check] Waiting for a healthy kubelet at ${opts.url}. This can take up to ${timeout}`,
  );
  const start = Date.now();
  const deadline = start + opts.timeoutMs;
  const failure = (cause: string) =>
    new Error(`The HTTP call equal to 'curl -sSL ${opts.url}' returned ${cause}`);
  try {
    await poll(
      async () => {
        let status: number;
        try {
          ({ status } = await access.probe(opts.url, { timeoutMs: probeTimeout(deadline) }));
        } catch (e) {
          throw failure(`error: ${describeNetworkFailure(e).text}`);
        }
        if (status !== 200) throw failure(`status code: ${status}`);
        return true;
      },
      {
        timeoutMs: opts.timeoutMs,
        intervalMs: opts.intervalMs ?? API_CALL_RETRY_INTERVAL_MS,
        what: `the kubelet at ${opts.url} to be healthy`,
      },
    );
  } catch (e) {
    // Cancelled: not a verdict on the kubelet.
    if (e instanceof PollStoppedError) throw e;
    opts.log(`[kubelet-check] The kubelet is not healthy after ${since(start)}`);
    const last = e instanceof PollTimeoutError ? e.lastError : e;
    const detail = last instanceof Error ? `: ${last.message}` : "";
    throw new Error(
      `the kubelet is not healthy after ${timeout}${detail}\n\n${KUBELET_FAIL_HELP}`,
      { cause: e },
    );
  }
  opts.log(`[kubelet-check] The kubelet is healthy after ${since(start)}`);
}

export type ControlPlaneComponent = "kube-apiserver" | "kube-controller-manager" | "kube-scheduler";

export interface ComponentCheck {
  name: ControlPlaneComponent;
  url: string;
  /**
   * kube-apiserver is checked through the authenticated client (its own server, AbsPath
   * "livez"): an anonymous request may be refused (wait.go). The others are plain HTTPS
   * without certificate checks.
   */
  viaClient: boolean;
}

interface ComponentRule {
  name: ControlPlaneComponent;
  args: readonly [string, string];
  defaultAddress?: string;
  defaultPort: string;
  endpoint: string;
}

// getControlPlaneComponents (wait.go): kube-apiserver has no --bind-address by default, so its
// --advertise-address is used; the others default to kubeadm's --bind-address=127.0.0.1.
// Ports are constants.KubeAPIServerPort, KubeControllerManagerPort, KubeSchedulerPort.
// kube-controller-manager still answers on /healthz (kubernetes#118158).
const RULES: readonly ComponentRule[] = [
  {
    name: "kube-apiserver",
    args: ["advertise-address", "secure-port"],
    defaultPort: "6443",
    endpoint: "livez",
  },
  {
    name: "kube-controller-manager",
    args: ["bind-address", "secure-port"],
    defaultAddress: "127.0.0.1",
    defaultPort: "10257",
    endpoint: "healthz",
  },
  {
    name: "kube-scheduler",
    args: ["bind-address", "secure-port"],
    defaultAddress: "127.0.0.1",
    defaultPort: "10259",
    endpoint: "livez",
  },
];

interface ContainerLike {
  command?: unknown;
}

function containerCommand(pod: KubeObject, component: string): string[] | undefined {
  const spec = pod.spec as { containers?: ContainerLike[] } | undefined;
  for (const container of spec?.containers ?? []) {
    const command = Array.isArray(container.command) ? (container.command as unknown[]) : [];
    if (command[0] === component) return command.map(String);
  }
  return undefined;
}

// getControlPlaneComponentAddressAndPort: for each command line starting with --arg or -arg,
// the value after "=" (or after a space); a later occurrence wins. Kept as kubeadm matches
// (by prefix), so the URL is the one kubeadm would print.
function flagValues(command: string[], args: readonly string[]): string[] {
  const values = args.map(() => "");
  for (const raw of command) {
    const line = raw.trim();
    args.forEach((arg, i) => {
      if (!line.startsWith(`--${arg}`) && !line.startsWith(`-${arg}`)) return;
      const eq = line.indexOf("=");
      if (eq >= 0) values[i] = line.slice(eq + 1);
      else {
        const space = line.indexOf(" ");
        values[i] = space >= 0 ? line.slice(space + 1) : "";
      }
    });
  }
  return values;
}

function podFor(pods: readonly KubeObject[], component: string): KubeObject | undefined {
  return (
    pods.find((p) => p.metadata?.name === component) ??
    pods.find((p) => containerCommand(p, component) !== undefined)
  );
}

/**
 * The health endpoint of each control-plane component, from its static pod manifest
 * (kubeadm getControlPlaneComponents). `apiServerAddress` (localAPIEndpoint.advertiseAddress)
 * stands in when kube-apiserver's manifest has no --advertise-address.
 */
export function controlPlaneComponentChecks(
  pods: readonly KubeObject[],
  opts: { apiServerAddress?: string } = {},
): ComponentCheck[] {
  const problems: string[] = [];
  const checks: ComponentCheck[] = [];
  for (const rule of RULES) {
    const pod = podFor(pods, rule.name);
    const command = pod ? containerCommand(pod, rule.name) : undefined;
    if (!pod) problems.push(`got no static Pod for component "${rule.name}"`);
    else if (!command)
      problems.push(`the Pod has no container command starting with "${rule.name}"`);
    const [address, port] = flagValues(command ?? [], rule.args);
    const host = address || (rule.defaultAddress ?? opts.apiServerAddress ?? "");
    if (!host)
      problems.push(`${rule.name} has no --${rule.args[0]} and no default address was given`);
    checks.push({
      name: rule.name,
      url: `https://${joinHostPort(host, port || rule.defaultPort)}/${rule.endpoint}`,
      viaClient: rule.name === "kube-apiserver",
    });
  }
  if (problems.length > 0) {
    throw new Error(
      `could not parse the address and port of all control plane components: ${problems.join("; ")}`,
    );
  }
  return checks;
}

export interface ControlPlaneWaitOptions {
  /** timeouts.controlPlaneComponentHealthCheck. */
  timeoutMs: number;
  intervalMs?: number;
  log: (line: string) => void;
  /** nodeRegistration.criSocket, for the troubleshooting hint. */
  criSocket: string;
  /** The "still waiting" lines' interval and clock (workflow/heartbeat.ts); tests shorten it. */
  heartbeat?: Pick<HeartbeatOptions, "everyMs" | "clock">;
}

async function checkOnce(
  check: ComponentCheck,
  access: ClusterAccess,
  client: KubeClient,
  deadline: number,
): Promise<true> {
  let status: number;
  try {
    status = check.viaClient
      ? (await client.getRaw(new URL(check.url).pathname)).status
      : (
          await access.probe(check.url, {
            insecureSkipTLSVerify: true,
            timeoutMs: probeTimeout(deadline),
          })
        ).status;
  } catch (e) {
    throw new Error(
      `${check.name} check failed at ${check.url}: ${describeNetworkFailure(e).text}`,
      { cause: e },
    );
  }
  if (status !== 200) {
    throw new Error(`${check.name} check failed at ${check.url} with status: ${status}`);
  }
  return true;
}

/**
 * kubeadm WaitForControlPlaneComponents: every component polled in parallel until its health
 * endpoint answers 200. On failure, one error names each unhealthy component, its URL, the
 * timeout and its last error, followed by kubeadm's crictl hint.
 */
export async function waitForControlPlaneComponents(
  access: ClusterAccess,
  client: KubeClient,
  checks: readonly ComponentCheck[],
  opts: ControlPlaneWaitOptions,
): Promise<void> {
  const timeout = formatGoDuration(opts.timeoutMs);
  opts.log(
    `[control-plane-check] Waiting for healthy control plane components. This can take up to ${timeout}`,
  );
  for (const check of checks) {
    opts.log(`[control-plane-check] Checking ${check.name} at ${check.url}`);
  }
  const start = Date.now();
  const deadline = start + opts.timeoutMs;
  const pending = new Set(checks.map((c) => c.name));
  const results = await withHeartbeat(
    {
      ...opts.heartbeat,
      label: "[control-plane-check] Still waiting",
      pending: () => [...pending],
      log: opts.log,
    },
    () =>
      Promise.all(
        checks.map(async (check) => {
          try {
            await poll(() => checkOnce(check, access, client, deadline), {
              timeoutMs: opts.timeoutMs,
              intervalMs: opts.intervalMs ?? API_CALL_RETRY_INTERVAL_MS,
              what: `${check.name} at ${check.url} to be healthy`,
            });
            opts.log(`[control-plane-check] ${check.name} is healthy after ${since(start)}`);
            return undefined;
          } catch (e) {
            if (e instanceof PollStoppedError) throw e;
            opts.log(`[control-plane-check] ${check.name} is not healthy after ${since(start)}`);
            const last = e instanceof PollTimeoutError ? e.lastError : e;
            const reason =
              last instanceof Error
                ? last.message
                : `${check.name} check at ${check.url} did not complete`;
            return { check, reason, error: e };
          } finally {
            pending.delete(check.name);
          }
        }),
      ),
  );
  const failed = results.filter((r) => r !== undefined);
  if (failed.length === 0) return;
  const lines = failed.map((f) => `\t- ${f.reason}`);
  const names = failed.map((f) => f.check.name).join(", ");
  throw new Error(
    `control plane components not healthy after ${timeout}: ${names}\n${lines.join("\n")}\n\n${controlPlaneFailHelp(opts.criSocket)}`,
    {
      cause:
        failed.length === 1 ? failed[0]!.error : new AggregateError(failed.map((f) => f.error)),
    },
  );
}
