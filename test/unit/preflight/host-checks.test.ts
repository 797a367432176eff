// Checks whose inputs cannot be arranged on the test machine for real (1 CPU, 1 GiB, a non-root
// user, swap, cgroup v1, an old kernel, other kubelet versions): a HostDouble over a LocalHost
// with a temporary rootfs supplies them.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Check, CheckResult } from "../../../src/node/preflight/checks.js";
import { connectCRI, criCheck, criConnectWarning } from "../../../src/node/preflight/cri.js";
import {
  isPrivilegedUserCheck,
  memCheck,
  numCPUCheck,
  SWAP_WARNING,
  swapCheck,
} from "../../../src/node/preflight/resource-checks.js";
import {
  firewalldCheck,
  NO_INIT_SYSTEM,
  serviceCheck,
} from "../../../src/node/preflight/services.js";
import {
  CGROUPS_V1_MESSAGE,
  systemVerificationCheck,
  VERIFICATION_FAILED,
} from "../../../src/node/preflight/system.js";
import {
  kubeletVersionCheck,
  kubernetesVersionCheck,
} from "../../../src/node/preflight/version-checks.js";
import { hostnameCheck } from "../../../src/node/preflight/network-checks.js";
import { LocalHost } from "../../../src/remote/local.js";
import {
  type CommandStub,
  HostDouble,
  type HostDoubleOptions,
  onPath,
} from "../../support/host-double.js";

let rootfs: string;
let real: LocalHost;
beforeAll(async () => {
  rootfs = await mkdtemp(join(tmpdir(), "kubeforge-preflight-"));
  real = new LocalHost({ rootfs });
});
afterAll(async () => {
  await rm(rootfs, { recursive: true, force: true });
});

const double = (opts: HostDoubleOptions) => new HostDouble(real, opts);
const run = (c: Check): Promise<CheckResult> => c.check();

function kubelet(output: string | undefined): CommandStub[] {
  if (output === undefined) return [onPath("kubelet", undefined)];
  return [
    onPath("kubelet", "/usr/bin/kubelet"),
    { match: ["/usr/bin/kubelet", "--version"], result: { stdout: `${output}\n` } },
  ];
}

describe("resources and privileges", () => {
  it.each([
    [1, ["the number of available CPUs 1 is less than the required 2"]],
    [2, []],
    [4, []],
  ])("NumCPU with %i CPUs", async (cpuCount, errors) => {
    const c = numCPUCheck(double({ facts: { cpuCount } }));
    expect(c.name()).toBe("NumCPU");
    expect(await run(c)).toEqual({ warnings: [], errors });
  });

  const MiB = 1024 * 1024;
  it.each([
    [1024 * MiB, ["the system RAM (1024 MB) is less than the minimum 1700 MB"]],
    // kubeadm rounds down to whole MiB: one byte short of 1700 MiB is 1699.
    [1700 * MiB - 1, ["the system RAM (1699 MB) is less than the minimum 1700 MB"]],
    [1700 * MiB, []],
  ])("Mem with %i bytes", async (memoryBytes, errors) => {
    expect(await run(memCheck(double({ facts: { memoryBytes } })))).toEqual({
      warnings: [],
      errors,
    });
  });

  it("IsPrivilegedUser passes for root and for a user whose sudo works, and fails otherwise", async () => {
    const c = isPrivilegedUserCheck(double({ facts: { uid: 1000, rootAccess: false } }));
    expect(c.name()).toBe("IsPrivilegedUser");
    expect(await run(c)).toEqual({
      warnings: [],
      errors: [
        "user is not running as root (uid 1000) and cannot use sudo: run as root, allow the user password-less sudo, or (over SSH) set ssh.sudoPassword",
      ],
    });
    for (const facts of [
      { uid: 0, rootAccess: true },
      { uid: 1000, rootAccess: true },
    ]) {
      expect(await run(isPrivilegedUserCheck(double({ facts })))).toEqual({
        warnings: [],
        errors: [],
      });
    }
  });

  const header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
  it.each([
    ["with a swap file", `${header}/swapfile  file  2097148  0  -2\n`, [SWAP_WARNING]],
    ["with only the header", header, []],
    ["without /proc/swaps", null, []],
  ])("Swap %s", async (_what, swaps, warnings) => {
    const c = swapCheck(double({ files: { "/proc/swaps": swaps } }));
    expect(await run(c)).toEqual({ warnings, errors: [] });
  });
});

describe("KubernetesVersion (newest supported minor 37)", () => {
  it.each([
    ["v1.37.9", []],
    ["v1.33.0", []],
    [
      "v1.38.0-alpha.1",
      [
        "Kubernetes version is greater than kubeadm version. Please consider to upgrade kubeadm. Kubernetes version: 1.38.0-alpha.1. Kubeadm version: 1.37.x",
      ],
    ],
    [
      "v1.40.2",
      [
        "Kubernetes version is greater than kubeadm version. Please consider to upgrade kubeadm. Kubernetes version: 1.40.2. Kubeadm version: 1.37.x",
      ],
    ],
  ])("%s", async (version, warnings) => {
    expect(await run(kubernetesVersionCheck(version, 37))).toEqual({ warnings, errors: [] });
  });
});

describe("KubeletVersion (control plane v1.35.0)", () => {
  it.each([
    ["Kubernetes v1.35.0", []],
    ["Kubernetes v1.32.4", []],
    [
      "Kubernetes v1.36.0",
      [
        'the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: "1.36.0" Control plane version: "1.35.0"',
      ],
    ],
    [
      "Kubernetes v1.31.9",
      ['Kubelet version "1.31.9" is lower than kubeadm can support. Please upgrade kubelet'],
    ],
    [
      // a pre-release of the minimum is below it
      "Kubernetes v1.32.0-rc.1",
      ['Kubelet version "1.32.0-rc.1" is lower than kubeadm can support. Please upgrade kubelet'],
    ],
    [
      "kubelet version 1.35",
      [
        'couldn\'t get kubelet version: Unable to parse output from Kubelet: "kubelet version 1.35"',
      ],
    ],
    [
      undefined,
      [
        "couldn't get kubelet version: cannot execute 'kubelet --version': exec: \"kubelet\": executable file not found in $PATH",
      ],
    ],
  ])("kubelet %s", async (output, errors) => {
    const c = kubeletVersionCheck(double({ commands: kubelet(output) }), "v1.35.0", 35);
    expect(c.name()).toBe("KubeletVersion");
    expect(await run(c)).toEqual({ warnings: [], errors });
  });
});

describe("SystemVerification", () => {
  const v1Mounts =
    "tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0\n" +
    "cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0\n";
  const procCgroups =
    "#subsys_name\thierarchy\tnum_cgroups\tenabled\n" +
    ["cpuset", "cpu", "cpuacct", "blkio", "memory", "devices", "freezer", "pids", "hugetlb"]
      .map((s, i) => `${s}\t${i + 1}\t1\t1`)
      .join("\n") +
    "\n";
  const v2Mounts = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n";
  const linux: CommandStub = { match: ["uname"], result: { stdout: "Linux\n" } };

  function sysHost(o: {
    kernel?: string;
    mounts: string;
    files?: Record<string, string | null>;
    kubelet?: string;
    uname?: string;
  }): HostDouble {
    return double({
      facts: { kernelRelease: o.kernel ?? "6.1.0-18-amd64" },
      files: {
        "/proc/mounts": o.mounts,
        "/proc/cgroups": procCgroups,
        "/sys/fs/cgroup/memory": "",
        ...o.files,
      },
      commands: [
        ...(o.uname === undefined
          ? [linux]
          : [{ match: ["uname"], result: { stdout: `${o.uname}\n` } }]),
        ...kubelet(o.kubelet),
      ],
    });
  }

  it("warns on cgroup v1 when the kubelet is older than 1.35 (or unknown)", async () => {
    for (const k of ["Kubernetes v1.34.2", undefined]) {
      const r = await run(systemVerificationCheck(sysHost({ mounts: v1Mounts, kubelet: k })));
      expect(r).toEqual({ warnings: [CGROUPS_V1_MESSAGE], errors: [], info: [] });
    }
  });

  it("fails on cgroup v1 with a kubelet 1.35 or newer, printing the report first", async () => {
    const r = await run(
      systemVerificationCheck(sysHost({ mounts: v1Mounts, kubelet: "Kubernetes v1.35.0" })),
    );
    expect(r.errors).toEqual([CGROUPS_V1_MESSAGE]);
    expect(r.warnings).toEqual([]);
    expect(r.info?.[0]).toBe(VERIFICATION_FAILED);
    expect(r.info).toContain("KERNEL_VERSION: 6.1.0-18-amd64");
    expect(r.info).toContain("OS: Linux");
    expect(r.info).toContain("CGROUPS_MEMORY: enabled");
  });

  it.each([
    ["4.19.0-26-amd64", ["unsupported kernel release: 4.19.0-26-amd64"]],
    ["5.4.0-150-generic", []],
    ["5.8.0-1-amd64", ["unsupported kernel release: 5.8.0-1-amd64"]],
    ["6.18.44", []],
  ])("kernel %s", async (kernel, errors) => {
    const r = await run(
      systemVerificationCheck(
        sysHost({
          kernel,
          mounts: v2Mounts,
          files: { "/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids\n" },
        }),
      ),
    );
    expect(r.errors).toEqual(errors);
    expect(r.warnings).toEqual([]);
  });

  it("names the missing cgroup v2 controllers: required ones fail, optional ones warn", async () => {
    const r = await run(
      systemVerificationCheck(
        sysHost({
          mounts: v2Mounts,
          files: { "/sys/fs/cgroup/cgroup.controllers": "cpu io pids\n" },
        }),
      ),
    );
    expect(r.errors).toEqual(["missing required cgroups: cpuset memory"]);
    expect(r.warnings).toEqual(["missing optional cgroups: hugetlb"]);
    expect(r.info).toContain("CGROUPS_CPUSET: missing");
    expect(r.info).toContain("CGROUPS_DEVICES: enabled"); // built into cgroup v2
  });

  it("fails on an operating system other than Linux", async () => {
    const r = await run(
      systemVerificationCheck(
        sysHost({
          uname: "Darwin",
          mounts: v2Mounts,
          files: { "/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids\n" },
        }),
      ),
    );
    expect(r.errors).toEqual(["unsupported operating system: Darwin"]);
  });
});

describe("services", () => {
  const systemd = onPath("systemctl", "/usr/bin/systemctl");
  const noInit = [onPath("systemctl", undefined), onPath("openrc", undefined)];

  it("Firewalld warns when firewalld is active, listing the ports as Go prints []int", async () => {
    const host = double({
      commands: [
        systemd,
        {
          match: ["systemctl", "status", "firewalld"],
          result: { code: 0, stdout: "Loaded: loaded" },
        },
        { match: ["systemctl", "is-active", "firewalld"], result: { stdout: "active\n" } },
      ],
    });
    expect(await run(firewalldCheck(host, [6443, 10250]))).toEqual({
      warnings: [
        "firewalld is active, please ensure ports [6443 10250] are open or your cluster may not function correctly",
      ],
      errors: [],
    });
  });

  it("Firewalld passes when the unit is unknown to systemd", async () => {
    const host = double({
      commands: [
        systemd,
        {
          match: ["systemctl", "status", "firewalld"],
          result: {
            code: 4,
            stdout:
              "○ firewalld.service\n     Loaded: not-found (Reason: Unit firewalld.service not found.)\n",
          },
        },
      ],
    });
    expect(await run(firewalldCheck(host, [6443, 10250]))).toEqual({ warnings: [], errors: [] });
  });

  it("Service-Kubelet warns about a missing or disabled kubelet unit", async () => {
    const missing = double({
      commands: [
        systemd,
        {
          match: ["systemctl", "status", "kubelet"],
          result: { code: 4, stdout: "Loaded: not-found" },
        },
      ],
    });
    const c = serviceCheck(missing, "kubelet");
    expect(c.name()).toBe("Service-Kubelet");
    expect(await run(c)).toEqual({ warnings: ["kubelet service does not exist"], errors: [] });

    const disabled = double({
      commands: [
        systemd,
        {
          match: ["systemctl", "status", "kubelet"],
          result: { code: 3, stdout: "Loaded: loaded" },
        },
        {
          match: ["systemctl", "is-enabled", "kubelet"],
          result: { code: 1, stdout: "disabled\n" },
        },
      ],
    });
    expect(await run(serviceCheck(disabled, "kubelet"))).toEqual({
      warnings: ["kubelet service is not enabled, please run 'systemctl enable kubelet.service'"],
      errors: [],
    });
  });

  it("without an init system both checks warn and skip", async () => {
    const host = double({ commands: noInit });
    expect(await run(serviceCheck(host, "kubelet"))).toEqual({
      warnings: [NO_INIT_SYSTEM],
      errors: [],
    });
    expect(await run(firewalldCheck(host, [6443, 10250]))).toEqual({
      warnings: [NO_INIT_SYSTEM],
      errors: [],
    });
  });
});

describe("CRI", () => {
  const socket = "unix:///run/containerd/containerd.sock";
  const crictl = onPath("crictl", "/usr/bin/crictl");

  it("without a reachable runtime, there is no CRI check but kubeadm's warning", async () => {
    const host = double({
      commands: [
        crictl,
        {
          match: ["/usr/bin/crictl", "--runtime-endpoint", socket, "version"],
          result: { code: 1, stderr: "connect: no such file or directory\n" },
        },
      ],
    });
    const conn = await connectCRI(host, socket);
    expect(conn.connected).toBe(false);
    if (!conn.connected) {
      expect(criConnectWarning(conn.reason)).toMatch(
        /^\[preflight\] WARNING: Couldn't create the interface used for talking to the container runtime: .*no such file or directory$/,
      );
    }
  });

  it("fails when the runtime answers but is not ready", async () => {
    const info = {
      status: {
        conditions: [{ type: "RuntimeReady", status: false, reason: "Starting", message: "wait" }],
      },
    };
    const host = double({
      commands: [
        crictl,
        {
          match: ["/usr/bin/crictl", "--runtime-endpoint", socket, "version"],
          result: { stdout: "RuntimeName: containerd" },
        },
        {
          match: ["/usr/bin/crictl", "--runtime-endpoint", socket, "info"],
          result: { stdout: JSON.stringify(info) },
        },
      ],
    });
    const conn = await connectCRI(host, socket);
    expect(conn.connected).toBe(true);
    expect(await run(criCheck(host, socket, conn))).toEqual({
      warnings: [],
      errors: [
        'container runtime condition "RuntimeReady" is not true. reason: Starting, message: wait',
      ],
    });
  });

  it("without crictl, a missing socket is a failed connection", async () => {
    const host = double({
      commands: [onPath("crictl", undefined), { match: ["test", "-S"], result: { code: 1 } }],
    });
    expect(await connectCRI(host, socket)).toEqual({
      connected: false,
      reason: "no container runtime socket at /run/containerd/containerd.sock",
    });
  });
});

describe("Hostname", () => {
  it("warns when the node name does not resolve", async () => {
    const host = double({ commands: [{ match: ["getent", "ahosts"], result: { code: 2 } }] });
    expect(await run(hostnameCheck(host, "node-1"))).toEqual({
      warnings: [
        'hostname "node-1" could not be reached',
        'hostname "node-1": lookup node-1: no such host',
      ],
      errors: [],
    });
  });

  it("warns when the node name is not a qualified name", async () => {
    const host = double({
      commands: [{ match: ["getent", "ahosts"], result: { stdout: "10.0.0.10 STREAM x\n" } }],
    });
    expect((await run(hostnameCheck(host, "-node"))).warnings).toEqual([
      `invalid node name format "-node": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
    ]);
  });
});
