import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  apiServerProxyConfig,
  apiServerProxyUnit,
  proxyServerURL,
} from "../../../src/node/apiserver-proxy.js";
import { localEndpoint } from "../../../src/cluster/up/local-endpoint.js";

// The node-local API server proxy's configuration, checked by the real HAProxy (`haproxy -c`).

async function haproxyCheck(config: string): Promise<{ code: number; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-haproxy-"));
  const file = join(dir, "apiserver-proxy.cfg");
  await writeFile(file, config);
  try {
    return await new Promise((resolve) => {
      execFile("haproxy", ["-c", "-f", file], (error, stdout, stderr) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr });
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const v4 = [
  { name: "cp-1", address: "10.0.0.1", port: 6443 },
  { name: "cp-2", address: "10.0.0.2", port: 6443 },
  { name: "cp-3", address: "10.0.0.3", port: 6443 },
];
const v6 = [
  { name: "cp-1", address: "fd00::1", port: 6443 },
  { name: "cp-2", address: "fd00::2", port: 6443 },
];

describe("node-local API server proxy", () => {
  it.each([
    {
      what: "IPv4 control planes",
      backends: v4,
      bind: "127.0.0.1:7443",
      endpoint: "127.0.0.1:7443",
    },
    { what: "IPv6 control planes", backends: v6, bind: "ipv6@::1:7443", endpoint: "[::1]:7443" },
  ])("$what: HAProxy accepts the configuration", async ({ backends, bind, endpoint }) => {
    const config = apiServerProxyConfig(backends);
    expect(config).toContain(`bind ${bind}`);
    for (const b of backends)
      expect(config).toMatch(new RegExp(`server ${b.name} \\S+:6443 check`));
    const check = await haproxyCheck(config);
    expect(check.output).not.toMatch(/ALERT/);
    expect(check.code).toBe(0);
    expect(localEndpoint(backends)).toBe(endpoint);
    expect(proxyServerURL(backends)).toBe(`https://${endpoint}`);
  });

  it("HAProxy refuses a broken configuration (the check can fail)", async () => {
    const broken = apiServerProxyConfig(v4).replace("mode tcp", "mode nonsense");
    expect((await haproxyCheck(broken)).code).not.toBe(0);
  });

  it("refuses an empty backend list", () => {
    expect(() => apiServerProxyConfig([])).toThrow(/at least one backend/);
  });

  it("runs HAProxy in the foreground under systemd with the managed configuration", () => {
    const unit = apiServerProxyUnit("/usr/sbin/haproxy");
    expect(unit).toContain("ExecStart=/usr/sbin/haproxy -Ws -f /etc/kubeforge/apiserver-proxy.cfg");
    expect(unit).toContain("Restart=always");
    expect(unit).toContain("WantedBy=multi-user.target");
  });
});
