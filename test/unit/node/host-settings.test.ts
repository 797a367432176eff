import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalHost } from "../../../src/remote/local.js";
import {
  FSTAB_BACKUP,
  FSTAB_SWAP_COMMENT,
  MODULES_LOAD_FILE,
  SYSCTL_FILE,
  fstabWithoutSwap,
  prepareHostSettings,
} from "../../../src/node/host-settings.js";
import { HostDouble, type CommandStub } from "../../support/host-double.js";

// prepareHostSettings against a simulated kernel: modules, sysctls and swap are state the stubs
// keep (this machine's own must not change), files live in a temporary rootfs. The same code
// runs on an isolated test host over SSH in test/integration/node/node-prep-ssh.test.ts.

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "kubeforge-host-settings-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Kernel {
  /** Loaded modules (/sys/module). */
  modules: Set<string>;
  /** Whether modprobe can load modules (false: no /lib/modules, as in a container). */
  modprobeWorks: boolean;
  /** Built in: the function is there without a module. */
  builtIn: Set<string>;
  sysctl: Map<string, string>;
  sysctlWritable: boolean;
  swaps: string[];
  /** Executables on root's PATH. */
  tools: Set<string>;
  installed: string[][];
  calls: string[];
}

const ALL_TOOLS = [
  "ip",
  "iptables",
  "mount",
  "nsenter",
  "conntrack",
  "ebtables",
  "ethtool",
  "socat",
  "tc",
];

function kernel(over: Partial<Kernel> = {}): Kernel {
  return {
    modules: new Set(),
    modprobeWorks: true,
    builtIn: new Set(),
    sysctl: new Map([["net.ipv4.ip_forward", "0"]]),
    sysctlWritable: true,
    swaps: [],
    tools: new Set([...ALL_TOOLS, "apt-get"]),
    installed: [],
    calls: [],
    ...over,
  };
}

const BRIDGE_KEYS = ["net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables"];

function node(k: Kernel) {
  const bridgeUp = () => {
    for (const key of BRIDGE_KEYS) if (!k.sysctl.has(key)) k.sysctl.set(key, "0");
  };
  if (k.builtIn.has("br_netfilter")) bridgeUp();
  const stubs: CommandStub[] = [
    {
      match: (a) => a[0] === "sh" && (a[2] ?? "").includes("command -v"),
      result: (a) => (k.tools.has(a[4]!) ? { stdout: `/usr/sbin/${a[4]}\n` } : { code: 1 }),
    },
    {
      match: ["test", "-d"],
      result: (a) => ({ code: k.modules.has(a[2]!.replace("/sys/module/", "")) ? 0 : 1 }),
    },
    {
      match: ["test", "-e", "/proc/sys/net/bridge/bridge-nf-call-iptables"],
      result: () => ({ code: k.sysctl.has(BRIDGE_KEYS[0]!) ? 0 : 1 }),
    },
    {
      match: ["cat", "/proc/filesystems"],
      result: () => ({
        stdout: `nodev\tproc\n${k.builtIn.has("overlay") ? "nodev\toverlay\n" : ""}`,
      }),
    },
    {
      match: ["modprobe"],
      result: (a) => {
        k.calls.push(a.join(" "));
        if (!k.modprobeWorks)
          return {
            code: 1,
            stderr: `modprobe: FATAL: Module ${a[1]} not found in directory /lib/modules/6.1.0`,
          };
        k.modules.add(a[1]!);
        if (a[1] === "br_netfilter") bridgeUp();
        return {};
      },
    },
    {
      match: ["sysctl", "-n"],
      result: (a) => {
        const v = k.sysctl.get(a[2]!);
        return v === undefined
          ? {
              code: 255,
              stderr: `sysctl: cannot stat /proc/sys/${a[2]!.replace(/\./g, "/")}: No such file or directory`,
            }
          : { stdout: `${v}\n` };
      },
    },
    {
      match: ["sysctl", "-w"],
      result: (a) => {
        k.calls.push(a.join(" "));
        const [key, value] = a[2]!.split("=") as [string, string];
        if (!k.sysctlWritable || !k.sysctl.has(key))
          return { code: 255, stderr: `sysctl: permission denied on key "${key}"` };
        k.sysctl.set(key, value);
        return { stdout: `${key} = ${value}\n` };
      },
    },
    {
      match: ["cat", "/proc/swaps"],
      result: () => ({
        stdout: ["Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority", ...k.swaps, ""].join("\n"),
      }),
    },
    {
      match: ["swapoff", "-a"],
      result: () => {
        k.calls.push("swapoff -a");
        k.swaps = [];
        return {};
      },
    },
    { match: (a) => a[2] === "apt-get" && a.at(-1) === "update", result: {} },
    {
      match: (a) => a[2] === "apt-get" && a.includes("install"),
      result: (a) => {
        const pkgs = a.slice(a.indexOf("--no-install-recommends") + 1);
        k.installed.push(pkgs);
        if (pkgs.includes("ebtables"))
          return { code: 100, stderr: "E: Unable to locate package ebtables" };
        if (pkgs.includes("conntrack")) k.tools.add("conntrack");
        if (pkgs.includes("socat")) k.tools.add("socat");
        if (pkgs.includes("iproute2")) {
          k.tools.add("ip");
          k.tools.add("tc");
        }
        return {};
      },
    },
  ];
  return new HostDouble(new LocalHost({ rootfs: root }), { commands: stubs });
}

describe("prepareHostSettings", () => {
  // kubeadm docs, "Dual-stack support with kubeadm": net.ipv6.conf.all.forwarding = 1 on every
  // node, in /etc/sysctl.d as for the IPv4 settings.
  it("turns IPv6 forwarding on, now and at boot, for a cluster with IPv6 ranges", async () => {
    const k = kernel({
      sysctl: new Map([
        ["net.ipv4.ip_forward", "0"],
        ["net.ipv6.conf.all.forwarding", "0"],
      ]),
    });
    const first = await prepareHostSettings(node(k), { allowInstall: false, ipv6Forwarding: true });
    expect(first.changed).toContain("set net.ipv6.conf.all.forwarding=1");
    expect(k.sysctl.get("net.ipv6.conf.all.forwarding")).toBe("1");
    const sysctlFile = await readFile(join(root, SYSCTL_FILE), "utf8");
    expect(sysctlFile).toContain("net.ipv6.conf.all.forwarding = 1\n");
  });

  it("loads modules, sets and persists sysctls; a second run changes nothing and says so", async () => {
    const k = kernel();
    const first = await prepareHostSettings(node(k), { allowInstall: false });
    expect(first.changed).toEqual([
      "loaded kernel module overlay",
      "loaded kernel module br_netfilter",
      `wrote ${MODULES_LOAD_FILE}`,
      "set net.bridge.bridge-nf-call-iptables=1",
      "set net.bridge.bridge-nf-call-ip6tables=1",
      "set net.ipv4.ip_forward=1",
      `wrote ${SYSCTL_FILE}`,
    ]);
    expect(await readFile(join(root, MODULES_LOAD_FILE), "utf8")).toMatch(
      /\noverlay\nbr_netfilter\n$/,
    );
    const sysctlFile = await readFile(join(root, SYSCTL_FILE), "utf8");
    expect(sysctlFile).toContain("net.bridge.bridge-nf-call-iptables = 1\n");
    expect(sysctlFile).toContain("net.bridge.bridge-nf-call-ip6tables = 1\n");
    expect(sysctlFile).toContain("net.ipv4.ip_forward = 1\n");

    k.calls = [];
    const lines: string[] = [];
    const second = await prepareHostSettings(node(k), {
      allowInstall: false,
      log: (l) => lines.push(l),
    });
    expect(second.changed).toEqual([]);
    expect(k.calls).toEqual([]);
    expect(lines).toEqual(["host settings already in place"]);
  });

  it("accepts built-in modules when modprobe cannot work (container), with a warning", async () => {
    const k = kernel({ modprobeWorks: false, builtIn: new Set(["overlay", "br_netfilter"]) });
    const lines: string[] = [];
    const r = await prepareHostSettings(node(k), {
      allowInstall: false,
      log: (l) => lines.push(l),
    });
    expect(r.changed).toContain("set net.ipv4.ip_forward=1");
    expect(lines.filter((l) => l.startsWith("WARNING"))).toEqual([
      expect.stringMatching(
        /^WARNING: could not load kernel module overlay \(modprobe: FATAL: Module overlay not found/,
      ),
      expect.stringMatching(
        /^WARNING: could not load kernel module br_netfilter .* kernel already provides it/,
      ),
    ]);
  });

  it("fails clearly when a module is neither loadable nor present", async () => {
    const k = kernel({ modprobeWorks: false, builtIn: new Set(["overlay"]) });
    await expect(prepareHostSettings(node(k), { allowInstall: false })).rejects.toThrow(
      /kernel module br_netfilter is not loaded and "modprobe br_netfilter" failed: modprobe: FATAL/,
    );
  });

  it("fails clearly when a sysctl cannot be set", async () => {
    const k = kernel({ modules: new Set(["overlay", "br_netfilter"]), sysctlWritable: false });
    k.sysctl.set(BRIDGE_KEYS[0]!, "1");
    k.sysctl.set(BRIDGE_KEYS[1]!, "1");
    await expect(prepareHostSettings(node(k), { allowInstall: false })).rejects.toThrow(
      /sysctl net.ipv4.ip_forward is 0 and could not be set to 1: sysctl: permission denied/,
    );
  });

  it("turns swap off and comments out fstab's swap lines, keeping the original once", async () => {
    const fstab = [
      "# /etc/fstab",
      "UUID=1234 / ext4 errors=remount-ro 0 1",
      "/swapfile none swap sw 0 0",
      "# /old-swap none swap sw 0 0",
      "",
    ].join("\n");
    await mkdir(join(root, "etc"), { recursive: true });
    await writeFile(join(root, "etc/fstab"), fstab);
    const k = kernel({ swaps: ["/swapfile\tfile\t4194300\t0\t-2"] });
    const r = await prepareHostSettings(node(k), { allowInstall: false });
    expect(r.changed).toContain("turned swap off (/swapfile)");
    expect(k.calls).toContain("swapoff -a");
    const edited = await readFile(join(root, "etc/fstab"), "utf8");
    expect(edited).toBe(fstab.replace("/swapfile none", `${FSTAB_SWAP_COMMENT}/swapfile none`));
    expect(await readFile(join(root, FSTAB_BACKUP), "utf8")).toBe(fstab);
    const again = await prepareHostSettings(node(k), { allowInstall: false });
    expect(again.changed).toEqual([]);
  });

  it("keeps swap on, fstab untouched, when the kubelet is to run with swap", async () => {
    const fstab = "UUID=1234 / ext4 defaults 0 1\n/swapfile none swap sw 0 0\n";
    await mkdir(join(root, "etc"), { recursive: true });
    await writeFile(join(root, "etc/fstab"), fstab);
    const k = kernel({ swaps: ["/swapfile\tfile\t4194300\t0\t-2"] });
    const lines: string[] = [];
    const r = await prepareHostSettings(node(k), {
      allowInstall: false,
      keepSwap: true,
      log: (l) => lines.push(l),
    });
    expect(k.calls).not.toContain("swapoff -a");
    expect(k.swaps).toHaveLength(1);
    expect(r.changed.filter((c) => /swap/.test(c))).toEqual([]);
    expect(await readFile(join(root, "etc/fstab"), "utf8")).toBe(fstab);
    expect(lines).toContain(
      "swap left on (/swapfile): the KubeletConfiguration sets failSwapOn: false",
    );
  });

  it("installs missing tools when allowed; an optional one that fails is a warning", async () => {
    const k = kernel({ tools: new Set(["iptables", "mount", "nsenter", "ethtool", "apt-get"]) });
    const lines: string[] = [];
    const r = await prepareHostSettings(node(k), { allowInstall: true, log: (l) => lines.push(l) });
    // One batch first; after it fails (ebtables is unknown here), one package at a time.
    expect(k.installed[0]).toEqual(["iproute2", "conntrack", "ebtables", "socat"]);
    expect(k.installed.slice(1)).toEqual([["iproute2"], ["conntrack"], ["ebtables"], ["socat"]]);
    expect(r.changed).toContain("installed iproute2, conntrack, socat");
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^WARNING: ebtables could not be installed: .*Unable to locate package ebtables/,
      ),
    );
  });

  it("refuses a missing required tool when installing is not allowed", async () => {
    const k = kernel({ tools: new Set(["ip", "mount", "nsenter"]) });
    await expect(prepareHostSettings(node(k), { allowInstall: false })).rejects.toThrow(
      /iptables not found and installing packages is not allowed; install them or allow installation/,
    );
    expect(k.installed).toEqual([]);
  });
});

describe("fstabWithoutSwap", () => {
  it.each([
    ["/dev/sda2 none swap sw 0 0\n", `${FSTAB_SWAP_COMMENT}/dev/sda2 none swap sw 0 0\n`],
    [
      "  UUID=x\tnone\tswap\tdefaults\t0\t0",
      `${FSTAB_SWAP_COMMENT}  UUID=x\tnone\tswap\tdefaults\t0\t0`,
    ],
    ["#/swap none swap sw 0 0\n", undefined],
    ["/dev/sda1 /mnt/swap ext4 defaults 0 0\n", undefined],
    ["", undefined],
  ])("%j", (input, expected) => {
    expect(fstabWithoutSwap(input)).toBe(expected);
  });
});
