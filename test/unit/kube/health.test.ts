import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { NodeClusterAccess } from "../../../src/kube/access.js";
import {
  controlPlaneComponentChecks,
  waitForControlPlaneComponents,
  waitForKubelet,
  type ComponentCheck,
} from "../../../src/kube/health.js";
import type {
  ClusterAccess,
  KubeClient,
  KubeObject,
  ProbeOptions,
  RawResponse,
} from "../../../src/kube/types.js";
import { LocalHost } from "../../../src/remote/local.js";

const staticPod = (name: string, command: string[]): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "kube-system" },
  spec: { containers: [{ name, image: `registry.k8s.io/${name}:v1.35.0`, command }] },
});

const kubeadmPods = (apiserver: string[], kcm: string[], scheduler: string[]): KubeObject[] => [
  staticPod("kube-apiserver", ["kube-apiserver", ...apiserver]),
  staticPod("kube-controller-manager", ["kube-controller-manager", ...kcm]),
  staticPod("kube-scheduler", ["kube-scheduler", ...scheduler]),
];

describe("controlPlaneComponentChecks", () => {
  it.each([
    [
      "kubeadm's defaults",
      kubeadmPods(
        [
          "--advertise-address=192.168.0.10",
          "--secure-port=6443",
          "--authorization-mode=Node,RBAC",
        ],
        ["--bind-address=127.0.0.1", "--leader-elect=true"],
        ["--bind-address=127.0.0.1"],
      ),
      [
        "https://192.168.0.10:6443/livez",
        "https://127.0.0.1:10257/healthz",
        "https://127.0.0.1:10259/livez",
      ],
    ],
    [
      "IPv6 addresses are bracketed",
      kubeadmPods(
        ["--advertise-address=fd00::10", "--secure-port=8443"],
        ["--bind-address=::1"],
        ["--bind-address=::"],
      ),
      ["https://[fd00::10]:8443/livez", "https://[::1]:10257/healthz", "https://[::]:10259/livez"],
    ],
    [
      "0.0.0.0 is kept as kubeadm keeps it; ports come from --secure-port, a space form works",
      kubeadmPods(
        ["--advertise-address=10.0.0.1"],
        ["--bind-address=0.0.0.0", "--secure-port=10300"],
        ["--secure-port 10301"],
      ),
      [
        "https://10.0.0.1:6443/livez",
        "https://0.0.0.0:10300/healthz",
        "https://127.0.0.1:10301/livez",
      ],
    ],
  ])("%s", (_name, pods, urls) => {
    const checks = controlPlaneComponentChecks(pods);
    expect(checks.map((c) => c.url)).toEqual(urls);
    expect(checks.map((c) => [c.name, c.viaClient])).toEqual([
      ["kube-apiserver", true],
      ["kube-controller-manager", false],
      ["kube-scheduler", false],
    ]);
  });

  it("falls back to localAPIEndpoint.advertiseAddress when the manifest has no --advertise-address", () => {
    const pods = kubeadmPods([], [], []);
    expect(controlPlaneComponentChecks(pods, { apiServerAddress: "10.1.2.3" })[0]!.url).toBe(
      "https://10.1.2.3:6443/livez",
    );
    expect(() => controlPlaneComponentChecks(pods)).toThrow(
      "kube-apiserver has no --advertise-address and no default address was given",
    );
  });

  it("names every manifest it cannot use", () => {
    const pods = [
      staticPod("kube-apiserver", ["kube-apiserver", "--advertise-address=10.0.0.1"]),
      staticPod("kube-scheduler", ["/bin/sh"]),
    ];
    expect(() => controlPlaneComponentChecks(pods)).toThrow(
      'could not parse the address and port of all control plane components: got no static Pod for component "kube-controller-manager"; the Pod has no container command starting with "kube-scheduler"',
    );
  });
});

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  servers = [];
});

/** An HTTP server answering `statuses` in turn, then the last one forever. */
async function healthz(statuses: number[]): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    const code = statuses[Math.min(hits, statuses.length - 1)]!;
    hits++;
    res.writeHead(code).end(code === 200 ? "ok" : "not ok");
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`,
    hits: () => hits,
  };
}

describe("waitForKubelet", () => {
  const access = new NodeClusterAccess(new LocalHost());

  it("polls the healthz until it answers 200, logging as kubeadm", async () => {
    const kubelet = await healthz([500, 500, 200]);
    const logs: string[] = [];
    await waitForKubelet(access, {
      url: kubelet.url,
      timeoutMs: 2000,
      intervalMs: 10,
      log: (l) => logs.push(l),
    });
    expect(kubelet.hits()).toBe(3);
    expect(logs[0]).toBe(
      `[kubelet-check] Waiting for a healthy kubelet at ${kubelet.url}. This can take up to 2s`,
    );
    expect(logs[1]).toMatch(/^\[kubelet-check\] The kubelet is healthy after \d+(\.\d+)?m?s$/);
  });

  it("times out saying the kubelet is unhealthy, the last error, and what to look at", async () => {
    const kubelet = await healthz([500]);
    const logs: string[] = [];
    // A probe still in flight at the deadline is cut, and its timeout is then the last error (as
    // in kubeadm, whose requests share the poll's context); on a loaded machine the last probe
    // can be that one. Probes here are never cut, so the last error is the server's 500.
    const uncut: ClusterAccess = Object.assign(Object.create(access) as ClusterAccess, {
      probe: (url: string, o: ProbeOptions) => access.probe(url, { ...o, timeoutMs: 10_000 }),
    });
    const error = (await waitForKubelet(uncut, {
      url: kubelet.url,
      timeoutMs: 2000,
      intervalMs: 50,
      log: (l) => logs.push(l),
    }).catch((e: unknown) => e)) as Error;
    expect(error.message).toBe(
      `the kubelet is not healthy after 2s: The HTTP call equal to 'curl -sSL ${kubelet.url}' returned status code: 500\n\n` +
        "Unfortunately, an error has occurred, likely caused by:\n" +
        "\t- The kubelet is not running\n" +
        "\t- The kubelet is unhealthy due to a misconfiguration of the node in some way (required cgroups disabled)\n\n" +
        "If you are on a systemd-powered system, you can try to troubleshoot the error with the following commands:\n" +
        "\t- 'systemctl status kubelet'\n" +
        "\t- 'journalctl -xeu kubelet'",
    );
    expect(logs[1]).toMatch(/^\[kubelet-check\] The kubelet is not healthy after /);
  });

  it("reports a refused connection", async () => {
    const kubelet = await healthz([200]);
    await new Promise((resolve) => servers.pop()!.close(resolve));
    await expect(
      waitForKubelet(access, { url: kubelet.url, timeoutMs: 1000, intervalMs: 100, log: () => {} }),
    ).rejects.toThrow(`returned error: connect ECONNREFUSED ${new URL(kubelet.url).host}`);
  });
});

/** Scripted answers per URL (probe) and for the client's /livez. */
function scripted(answers: Record<string, number[]>) {
  const asked: string[] = [];
  const next = (key: string): RawResponse => {
    asked.push(key);
    const list = answers[key]!;
    const status = list.length > 1 ? list.shift()! : list[0]!;
    if (status === 0)
      throw Object.assign(new Error(`connect ECONNREFUSED ${key}`), { code: "ECONNREFUSED" });
    return { status, body: "" };
  };
  const access: ClusterAccess = {
    clientFor: () => Promise.reject(new Error("not used")),
    probe: (url, opts) => {
      expect(opts.insecureSkipTLSVerify).toBe(true);
      return Promise.resolve().then(() => next(url));
    },
  };
  const client = {
    getRaw: (path: string) => Promise.resolve().then(() => next(`client:${path}`)),
  } as unknown as KubeClient;
  return { access, client, asked };
}

const checks: ComponentCheck[] = controlPlaneComponentChecks(
  kubeadmPods(
    ["--advertise-address=192.168.0.10", "--secure-port=6443"],
    ["--bind-address=127.0.0.1"],
    ["--bind-address=127.0.0.1"],
  ),
);

describe("waitForControlPlaneComponents", () => {
  it("checks kube-apiserver through the client and the others by URL, in parallel, until healthy", async () => {
    const { access, client, asked } = scripted({
      "client:/livez": [0, 500, 200],
      "https://127.0.0.1:10257/healthz": [503, 200],
      "https://127.0.0.1:10259/livez": [200],
    });
    const logs: string[] = [];
    await waitForControlPlaneComponents(access, client, checks, {
      timeoutMs: 2000,
      intervalMs: 10,
      log: (l) => logs.push(l),
      criSocket: "unix:///run/containerd/containerd.sock",
    });
    expect(asked.filter((a) => a === "client:/livez")).toHaveLength(3);
    expect(asked).not.toContain("https://192.168.0.10:6443/livez");
    expect(logs.slice(0, 4)).toEqual([
      "[control-plane-check] Waiting for healthy control plane components. This can take up to 2s",
      "[control-plane-check] Checking kube-apiserver at https://192.168.0.10:6443/livez",
      "[control-plane-check] Checking kube-controller-manager at https://127.0.0.1:10257/healthz",
      "[control-plane-check] Checking kube-scheduler at https://127.0.0.1:10259/livez",
    ]);
    expect(logs.slice(4).map((l) => l.replace(/after .*/, "after"))).toEqual([
      "[control-plane-check] kube-scheduler is healthy after",
      "[control-plane-check] kube-controller-manager is healthy after",
      "[control-plane-check] kube-apiserver is healthy after",
    ]);
  });

  it("says every so often which components it still waits for", async () => {
    const { access, client } = scripted({
      "client:/livez": [...Array<number>(12).fill(500), 200],
      "https://127.0.0.1:10257/healthz": [200],
      "https://127.0.0.1:10259/livez": [200],
    });
    const logs: string[] = [];
    await waitForControlPlaneComponents(access, client, checks, {
      timeoutMs: 5000,
      intervalMs: 10,
      log: (l) => logs.push(l),
      criSocket: "unix:///run/containerd/containerd.sock",
      heartbeat: { everyMs: 25 },
    });
    const beats = logs.filter((l) => l.includes("Still waiting"));
    expect(beats.length).toBeGreaterThan(0);
    // The other two answered at once: only kube-apiserver is pending.
    for (const b of beats) {
      expect(b).toMatch(/^\[control-plane-check\] Still waiting after \d+s: kube-apiserver$/);
    }
    // None after the wait ended.
    const count = logs.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(logs).toHaveLength(count);
  });

  it("names each failed component, its URL, the timeout and the last error, then kubeadm's crictl hint", async () => {
    const { access, client } = scripted({
      "client:/livez": [0],
      "https://127.0.0.1:10257/healthz": [200],
      "https://127.0.0.1:10259/livez": [500],
    });
    const logs: string[] = [];
    const error = (await waitForControlPlaneComponents(access, client, checks, {
      timeoutMs: 80,
      intervalMs: 10,
      log: (l) => logs.push(l),
      criSocket: "unix:///var/run/crio/crio.sock",
    }).catch((e: unknown) => e)) as Error;
    expect(error.message).toBe(
      "control plane components not healthy after 80ms: kube-apiserver, kube-scheduler\n" +
        "\t- kube-apiserver check failed at https://192.168.0.10:6443/livez: connect ECONNREFUSED client:/livez\n" +
        "\t- kube-scheduler check failed at https://127.0.0.1:10259/livez with status: 500\n\n" +
        "A control plane component may have crashed or exited when started by the container runtime.\n" +
        "To troubleshoot, list all containers using your preferred container runtimes CLI.\n" +
        "Here is one example how you may list all running Kubernetes containers by using crictl:\n" +
        "\t- 'crictl --runtime-endpoint unix:///var/run/crio/crio.sock ps -a | grep kube | grep -v pause'\n" +
        "\tOnce you have found the failing container, you can inspect its logs with:\n" +
        "\t- 'crictl --runtime-endpoint unix:///var/run/crio/crio.sock logs CONTAINERID'",
    );
    expect(
      logs
        .filter((l) => l.includes("is not healthy"))
        .map((l) => l.replace(/after .*/, "after"))
        .sort(),
    ).toEqual([
      "[control-plane-check] kube-apiserver is not healthy after",
      "[control-plane-check] kube-scheduler is not healthy after",
    ]);
  });
});
