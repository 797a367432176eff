import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, request, Agent, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  APISERVER_PROXY_SOCKET,
  apiServerProxyConfig,
  apiServerProxyUnit,
  changeProxyRotation,
  isProxyEndpoint,
  proxyRotationCommands,
  proxySessionsTo,
  untilNoSessionsTo,
  proxyServerURL,
} from "../../../src/node/apiserver-proxy.js";
import { LocalHost } from "../../../src/remote/local.js";
import { localEndpoint } from "../../../src/cluster/up/local-endpoint.js";

// The node-local API server proxy's configuration, checked by the real HAProxy (`haproxy -c`),
// and run by it in front of two HTTPS servers standing in for API servers: one whose /readyz
// starts answering 500 (as kube-apiserver's does while its etcd is down) loses its clients; one
// taken out through HAProxy's runtime API (as an upgrade does before its control plane changes)
// loses them at once, while its /readyz still answers 200, and gets them back when put back.

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
    // An upgrade knows the proxies from kubeadm-config's controlPlaneEndpoint.
    expect(isProxyEndpoint(endpoint)).toBe(true);
    expect(isProxyEndpoint(`${backends[0]!.address}:6443`)).toBe(false);
    expect(isProxyEndpoint(undefined)).toBe(false);
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

  it("takes an API server whose /readyz fails out of rotation and closes its sessions", async () => {
    const p = await startProxy();
    try {
      const { port, ready } = p;
      const agent = new Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
      p.stoppers.push(() => agent.destroy());
      const fresh = () => get(port, new Agent({ rejectUnauthorized: false }));

      // Both ready: new connections go round-robin to both.
      const seen = new Set<string>();
      await waitFor(async () => {
        seen.add(await fresh());
        return seen.size === 2;
      });
      // A keep-alive session bound to "a" (one socket, reused while a answers).
      const { closed } = await sessionTo(port, agent, "a");

      ready.set("a", false);
      // Marked down after two failed checks a second apart: its session is closed...
      await closed;
      // ...and every new connection goes to "b".
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await fresh());
      expect(answers).toEqual(Array(6).fill("b"));
      expect(await get(port, agent)).toBe("b");
    } finally {
      await p.stop();
    }
  }, 30_000);

  it("takes a ready API server out through the runtime API at once, and puts it back", async () => {
    const p = await startProxy();
    try {
      const { port } = p;
      const host = new LocalHost();
      const agent = new Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
      p.stoppers.push(() => agent.destroy());
      const fresh = () => get(port, new Agent({ rejectUnauthorized: false }));
      const both = async () => {
        const seen = new Set<string>();
        await waitFor(async () => {
          seen.add(await fresh());
          return seen.size === 2;
        });
      };
      await both();
      const { closed } = await sessionTo(port, agent, "a");
      expect(await proxySessionsTo(host, "a", p.socket)).toBe(1);

      const outAt = Date.now();
      await changeProxyRotation(host, proxyRotationCommands({ out: "a", back: ["b"] }), p.socket);
      // HAProxy's own count of a's sessions reaches 0: the upgrade waits for it before a's
      // API server restarts.
      expect(await untilNoSessionsTo(host, "a", { socket: p.socket })).toBe(0);
      // Closed by the command, not by a failed health check (a's /readyz still answers 200).
      await closed;
      expect(Date.now() - outAt).toBeLessThan(900);
      await expect(proxySessionsTo(host, "c", p.socket)).rejects.toThrow(
        /the API server proxy on .* shows no sessions of kube-apiservers\/c/,
      );
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await fresh());
      expect(answers).toEqual(Array(6).fill("b"));

      await changeProxyRotation(host, proxyRotationCommands({ back: ["a", "b"] }), p.socket);
      await both();

      // A server the proxy does not have: HAProxy's refusal names it.
      await expect(
        changeProxyRotation(host, proxyRotationCommands({ out: "c", back: [] }), p.socket),
      ).rejects.toThrow(
        /the API server proxy on .* refused "set server kube-apiservers\/c state maint.*": .*No such server/i,
      );
      // No runtime API there (a proxy configured before it had one): the error names the socket.
      await expect(
        changeProxyRotation(host, "show servers state", join(p.dir, "missing.sock")),
      ).rejects.toThrow(/cannot reach the API server proxy's runtime API \(.*missing\.sock\) on /);
    } finally {
      await p.stop();
    }
  }, 30_000);
});

/**
 * HAProxy with kubeforge's configuration in front of two HTTPS servers "a" and "b" standing in
 * for API servers (their /readyz answers 500 when `ready` says false); a free port and a
 * private runtime socket instead of the fixed ones.
 */
async function startProxy() {
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-haproxy-"));
  const stoppers: (() => void)[] = [];
  const stop = async () => {
    for (const s of stoppers) s();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await run("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-subj",
      "/CN=kube-apiserver",
      "-days",
      "1",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ]);
    const tls = {
      key: await readFile(join(dir, "key.pem")),
      cert: await readFile(join(dir, "cert.pem")),
    };
    const ready = new Map([
      ["a", true],
      ["b", true],
    ]);
    const backends = [];
    for (const name of ["a", "b"]) {
      const server = createServer(tls, (req, res) => {
        const code = req.url === "/readyz" && !ready.get(name) ? 500 : 200;
        res.writeHead(code, { "content-type": "text/plain" }).end(name);
      });
      backends.push({ name, address: "127.0.0.1", port: await listen(server) });
      stoppers.push(() => server.close());
    }
    // The backends' behaviour is under test, not the fixed port: a free one is bound instead.
    const probe = createServer(tls);
    const port = await listen(probe);
    await new Promise((resolve) => probe.close(resolve));
    const socket = join(dir, "runtime.sock");
    const config = apiServerProxyConfig(backends)
      .replace("127.0.0.1:7443", `127.0.0.1:${port}`)
      .replace(APISERVER_PROXY_SOCKET, socket);
    await writeFile(join(dir, "proxy.cfg"), config);
    const haproxy = spawn("haproxy", ["-db", "-f", join(dir, "proxy.cfg")], { stdio: "ignore" });
    stoppers.push(() => haproxy.kill("SIGKILL"));
    return { dir, port, socket, ready, stoppers, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** A keep-alive session bound to `name`; `closed` resolves when its socket closes. */
async function sessionTo(
  port: number,
  agent: Agent,
  name: string,
): Promise<{ closed: Promise<void> }> {
  await waitFor(async () => (await get(port, agent)) === name);
  const socket = Object.values(agent.freeSockets).flat()[0];
  expect(socket).toBeDefined();
  return { closed: new Promise<void>((resolve) => socket!.once("close", () => resolve())) };
}

const run = promisify(execFile);

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)),
  );
}

/** GET / through the proxy; the answering backend's name. */
function get(port: number, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/", agent }, (res) => {
      let body = "";
      res.on("data", (b: Buffer) => (body += b.toString()));
      res.on("end", () => resolve(body));
    });
    req.on("error", reject);
    req.end();
  });
}

async function waitFor(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 200));
  }
}
