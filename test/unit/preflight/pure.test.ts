// Pure pieces of preflight: Go's proxy selection, apimachinery's qualified names, the cgroup
// mount detection of system-validators (its own test cases), and kubeadm's check names.
import { describe, expect, it } from "vitest";
import { pathLabel } from "../../../src/node/preflight/checks.js";
import { httpProxyCheck, httpProxyCIDRCheck } from "../../../src/node/preflight/network-checks.js";
import { proxyFor, redactProxy } from "../../../src/node/preflight/proxy.js";
import { isQualifiedName } from "../../../src/config/names.js";
import {
  cgroupMountpoint,
  cgroupsV1IsFatal,
  cgroupV1Subsystems,
} from "../../../src/node/preflight/system.js";

describe("proxyFor (golang.org/x/net/http/httpproxy + NewProxierWithNoProxyCIDR)", () => {
  const env = { HTTPS_PROXY: "http://proxy.corp:3128" };
  it.each([
    // [env, host, port, expected]
    [env, "10.0.0.10", "", "http://proxy.corp:3128"],
    [{ https_proxy: "proxy.corp:3128" }, "10.0.0.10", "", "http://proxy.corp:3128"],
    [{ HTTP_PROXY: "http://proxy.corp:3128" }, "10.0.0.10", "", undefined], // https needs HTTPS_PROXY
    [env, "localhost", "", undefined],
    [env, "127.0.0.1", "", undefined],
    [env, "::1", "1234", undefined],
    [{ ...env, NO_PROXY: "*" }, "10.0.0.10", "", undefined],
    [{ ...env, NO_PROXY: "10.0.0.0/8" }, "10.1.2.3", "1234", undefined],
    [{ ...env, NO_PROXY: "10.0.0.0/8" }, "192.168.0.1", "", "http://proxy.corp:3128"],
    [{ ...env, no_proxy: "fd00::/8" }, "fd00::1", "1234", undefined],
    [{ ...env, NO_PROXY: "10.0.0.10" }, "10.0.0.10", "", undefined],
    [{ ...env, NO_PROXY: "10.0.0.10:443" }, "10.0.0.10", "", undefined], // https default port
    [{ ...env, NO_PROXY: "10.0.0.10:443" }, "10.0.0.10", "1234", "http://proxy.corp:3128"],
    [{ ...env, NO_PROXY: "foobar.com, .barbaz.net" }, "foobar.com", "", undefined],
    [{ ...env, NO_PROXY: "foobar.com, .barbaz.net" }, "www.foobar.com", "", undefined],
    [{ ...env, NO_PROXY: "foobar.com, .barbaz.net" }, "barbaz.net", "", "http://proxy.corp:3128"],
    [{ ...env, NO_PROXY: "foobar.com, .barbaz.net" }, "www.barbaz.net", "", undefined],
    [{ ...env, NO_PROXY: "*.example.com" }, "a.example.com", "", undefined],
    [{ ...env, NO_PROXY: "*.example.com" }, "example.com", "", "http://proxy.corp:3128"],
  ] as const)("%j → https://%s:%s", (e, host, port, expected) => {
    expect(proxyFor(e, "https", host, port)).toBe(expected);
  });

  it("never prints a proxy password", () => {
    expect(redactProxy("http://user:s3cret@proxy:3128")).toBe("http://user:xxxxx@proxy:3128");
    expect(redactProxy("http://proxy:3128")).toBe("http://proxy:3128");
  });
});

describe("HTTPProxy and HTTPProxyCIDR", () => {
  const env = { HTTPS_PROXY: "http://proxy:3128" };
  it("warns with kubeadm's words, bracketing an IPv6 advertise address with port 1234", async () => {
    expect(await httpProxyCheck(env, "10.0.0.10").check()).toEqual({
      warnings: [
        'Connection to "https://10.0.0.10" uses proxy "http://proxy:3128". If that is not intended, adjust your proxy settings',
      ],
      errors: [],
    });
    expect((await httpProxyCheck(env, "fd00::10").check()).warnings[0]).toContain(
      '"https://[fd00::10]:1234"',
    );
    expect(await httpProxyCheck({}, "10.0.0.10").check()).toEqual({ warnings: [], errors: [] });
  });

  it("tests the first address of each CIDR and skips an empty one", async () => {
    expect(await httpProxyCIDRCheck(env, "10.96.0.0/12").check()).toEqual({
      warnings: [
        'connection to "10.96.0.0/12" uses proxy "http://proxy:3128". This may lead to malfunctional cluster setup. Make sure that Pod and Services IP ranges specified correctly as exceptions in proxy configuration',
      ],
      errors: [],
    });
    // 10.96.0.1 is inside 10.96.0.0/16 even though the network address differs
    expect(
      await httpProxyCIDRCheck({ ...env, NO_PROXY: "10.96.0.0/16" }, "10.96.0.0/12").check(),
    ).toEqual({ warnings: [], errors: [] });
    expect(await httpProxyCIDRCheck(env, "").check()).toEqual({ warnings: [], errors: [] });
    expect((await httpProxyCIDRCheck(env, "10.96.0.0/33").check()).errors[0]).toMatch(
      /^error parsing CIDR "10.96.0.0\/33"/,
    );
  });
});

describe("isQualifiedName (apimachinery)", () => {
  const nameRegexError =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  it.each([
    ["node-1", []],
    ["Node_1.example", []],
    ["-node", [`name part ${nameRegexError}`]],
    ["", ["name part must be non-empty", `name part ${nameRegexError}`]],
    ["a".repeat(64), ["name part must be no more than 63 characters"]],
    ["example.com/node", []],
    ["/node", ["prefix part must be non-empty"]],
    [
      "a/b/c",
      [
        `a qualified name ${nameRegexError} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
      ],
    ],
  ])("%j", (value, errors) => {
    expect(isQualifiedName(value)).toEqual(errors);
  });
});

describe("cgroupMountpoint (system-validators TestGetUnifiedMountpoint cases)", () => {
  it.each([
    [
      "cgroups v2",
      "cgroup2 /sys/fs/cgroup cgroup2 rw,seclabel,nosuid,nodev,noexec,relatime 0 0",
      { path: "/sys/fs/cgroup", v2: true },
    ],
    [
      "cgroups v1",
      "cgroup /sys/fs/cgroup cgroup rw,seclabel,nosuid,nodev,noexec,relatime 0 0",
      { path: "/sys/fs/cgroup", v2: false },
    ],
    ["empty file", "", { error: "cgroup mountpoint not found" }],
    [
      "no cgroup mounts",
      "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\nsysfs /sys sysfs rw,seclabel,nosuid,nodev,noexec,relatime 0 0",
      { error: "cgroup mountpoint not found" },
    ],
    [
      "multiple cgroups v1 and v2",
      "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset\ncgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw,seclabel,nosuid,nodev,noexec,relatime",
      { path: "/sys/fs/cgroup/unified", v2: true },
    ],
    [
      "cgroups v1 only with multiple subsystems",
      "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset\ncgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory",
      { path: "/sys/fs/cgroup/cpuset", v2: false },
    ],
    [
      "cgroups using tmpfs, v1 and v2",
      "tmpfs /run tmpfs rw,nosuid,nodev,size=803108k,nr_inodes=819200,mode=755 0 0\ntmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,size=4096k,nr_inodes=1024,mode=755 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\ncgroup /sys/fs/cgroup/systemd cgroup rw,nosuid,nodev,noexec,relatime,xattr,name=systemd 0 0",
      { path: "/sys/fs/cgroup", v2: undefined },
    ],
  ])("%s", (_name, mounts, expected) => {
    expect(cgroupMountpoint(mounts)).toEqual(expected);
  });

  it("reads enabled v1 controllers from /proc/cgroups", () => {
    const text =
      "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t2\t1\t1\ncpu\t3\t1\t1\nhugetlb\t0\t1\t0\n";
    expect(cgroupV1Subsystems(text)).toEqual(["cpuset", "cpu"]);
  });

  it.each([
    ["", false],
    ["1.34.7", false],
    ["1.35.0-alpha.1", true],
    ["1.35.1", true],
  ])(
    "cgroups v1 with kubelet %j is fatal: %s (system-validators TestIsCgroupsV1DisabledInKubelet)",
    (v, fatal) => {
      expect(cgroupsV1IsFatal(v)).toBe(fatal);
    },
  );
});

describe("check names", () => {
  it("replace every / with - as kubeadm does", () => {
    expect(pathLabel("/etc/kubernetes/manifests/kube-apiserver.yaml")).toBe(
      "-etc-kubernetes-manifests-kube-apiserver.yaml",
    );
    expect(pathLabel("/proc/sys/net/ipv4/ip_forward")).toBe("-proc-sys-net-ipv4-ip_forward");
  });
});
