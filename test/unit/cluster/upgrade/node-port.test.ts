// The canary's NodePort path (src/cluster/upgrade/probes/node-port.ts, node-port-request.ts) over
// real sockets on loopback addresses standing in for nodes (127.0.0.2, 127.0.0.3, ...: Linux
// answers the whole 127/8): which nodes are the path, the service proxy when none answers (with
// the reason logged), the node a sample enters by, and how failures are sorted — kube-proxy
// REJECTs a NodePort whose Service has no endpoints (pkg/proxy/iptables/proxier.go: "has no
// endpoints", -j REJECT), so a refused connection is the workload's failure, as a reset, no
// answer or a non-200 answer are; a node that cannot be reached at all is PathUnavailable.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect as tcpConnect, type Socket } from "node:net";
import { Duplex } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  chooseCanaryTarget,
  chooseNodePortPath,
  nodePortTarget,
  pickNode,
  type NodePortCandidate,
  type NodePortNode,
} from "../../../../src/cluster/upgrade/probes/node-port.js";
import {
  connectFrom,
  directConnect,
  type Connect,
} from "../../../../src/cluster/upgrade/probes/node-port-request.js";
import {
  PathUnavailable,
  type ProbeTarget,
} from "../../../../src/cluster/upgrade/probes/prober.js";
import type { Host } from "../../../../src/remote/host.js";

const CHOICE = { timeoutMs: 1_000, retryForMs: 0, retryEveryMs: 50 };

/** A stand-in for kube-proxy forwarding to a Pod: `handler` answers on address:port. */
function serve(
  address: string,
  port: number,
  handler: Parameters<typeof createServer>[1],
): Promise<Server> {
  const server = createServer(handler);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, address, () => resolve(server));
  });
}

const pod =
  (name: string): Parameters<typeof createServer>[1] =>
  (req, res) => {
    if (req.url === "/hostname") res.writeHead(200).end(name);
    else res.writeHead(404).end();
  };

const closeAll = (servers: Server[]) =>
  Promise.all(
    servers.map((s) => {
      s.closeAllConnections();
      return new Promise((r) => s.close(r));
    }),
  );

const direct = (name: string, address: string): NodePortCandidate => ({
  name,
  address,
  routes: [{ via: "direct", connect: directConnect }],
});

/** A free port on 127.0.0.2 (the NodePort every "node" uses). */
async function freePortOn(address: string): Promise<number> {
  const s = await serve(address, 0, () => {});
  const port = (s.address() as AddressInfo).port;
  await closeAll([s]);
  return port;
}

/** A Duplex over a socket that has none of a socket's own methods. */
function plainStream(s: Socket): Duplex {
  const d = new Duplex({
    read() {
      s.resume();
    },
    write(chunk: Buffer, _enc, done) {
      s.write(chunk, done);
    },
    final(done) {
      s.end();
      done();
    },
    destroy(err, done) {
      s.destroy();
      done(err);
    },
  });
  s.on("data", (b: Buffer) => {
    if (!d.push(b)) s.pause();
  });
  s.on("end", () => d.push(null));
  s.on("error", (e) => d.destroy(e));
  return d;
}

const failingConnect =
  (e: Error): Connect =>
  () =>
    Promise.reject(e);

const errno = (code: string, message = `connect ${code}`) =>
  Object.assign(new Error(message), { code });

describe("choosing the canary's path", () => {
  let port: number;
  const servers: Server[] = [];

  beforeAll(async () => {
    port = await freePortOn("127.0.0.2");
    servers.push(await serve("127.0.0.2", port, pod("kubeforge-canary-a")));
    servers.push(await serve("127.0.0.4", port, pod("kubeforge-canary-b")));
  });
  afterAll(() => closeAll(servers));

  it("keeps the nodes that answer 200, in order, and says why the others are not on it", async () => {
    const path = await chooseNodePortPath(
      [direct("w-1", "127.0.0.2"), direct("w-2", "127.0.0.3"), direct("cp-1", "127.0.0.4")],
      port,
      CHOICE,
    );
    expect(path.nodes.map((n) => [n.name, n.address, n.via])).toEqual([
      ["w-1", "127.0.0.2", "direct"],
      ["cp-1", "127.0.0.4", "direct"],
    ]);
    expect(path.refused).toEqual([
      expect.stringMatching(/^w-2: connect ECONNREFUSED 127\.0\.0\.3:/),
    ]);
  });

  it("takes the node's own connection when the runner cannot connect itself", async () => {
    // The node's own connection: a stream, not a socket, as an SSH channel is (no setTimeout,
    // no setNoDelay), to where the node reaches its address (here 127.0.0.2, which the runner's
    // direct connection to 127.0.0.3 does not reach).
    const viaNode: Connect = (_host, p) =>
      new Promise((resolve, reject) => {
        const s = tcpConnect({ host: "127.0.0.2", port: p });
        s.once("connect", () => resolve(plainStream(s)));
        s.once("error", reject);
      });
    const candidate = (direct: Connect): NodePortCandidate => ({
      name: "w-1",
      address: "127.0.0.3",
      routes: [
        { via: "direct", connect: direct },
        { via: "ssh", connect: viaNode },
      ],
    });
    // Refused: the runner got to the node, which does not serve the port (yet): not through SSH.
    const refused = await chooseNodePortPath([candidate(directConnect)], port, CHOICE);
    expect(refused.nodes).toEqual([]);
    expect(refused.refused).toEqual([expect.stringMatching(/^w-1: connect ECONNREFUSED [^;]*$/)]);
    // No route, or no answer to the connect: the runner does not get there; the node does.
    const noRoute = failingConnect(errno("EHOSTUNREACH"));
    await expect(
      chooseNodePortPath([candidate(noRoute)], port, CHOICE).then((p) => p.nodes.length),
    ).resolves.toBe(1);
    const path = await chooseNodePortPath(
      [candidate(failingConnect(errno("ETIMEDOUT", "connect 127.0.0.3: no answer")))],
      port,
      CHOICE,
    );
    expect(path.nodes.map((n) => [n.name, n.via])).toEqual([["w-1", "ssh"]]);
    const target = nodePortTarget(path.nodes, port, 1_000, () => []);
    await expect(target.check(new AbortController().signal)).resolves.toBeUndefined();
  });

  it("falls back to the service proxy when no node answers, logging the port and each reason", async () => {
    const lines: string[] = [];
    const proxied: ProbeTarget = {
      name: "kubeforge-canary",
      kind: "workload",
      url: "/api/v1/namespaces/kubeforge-probes/services/kubeforge-canary:http/proxy/hostname",
      checks: "GET /api/v1/…",
      check: () => Promise.resolve(),
    };
    const target = await chooseCanaryTarget(
      {
        port,
        candidates: [direct("w-1", "127.0.0.3"), direct("w-2", "127.0.0.5")],
        proxied: () => Promise.resolve(proxied),
        running: () => [],
        timeoutMs: 1_000,
        log: (l) => lines.push(l),
      },
      CHOICE,
    );
    expect(target).toBe(proxied);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^no node answered on NodePort ${port} \\(w-1: connect ECONNREFUSED 127\\.0\\.0\\.3:${port}; w-2: connect ECONNREFUSED 127\\.0\\.0\\.5:${port}\\); through the API server's service proxy$`,
      ),
    );
  });

  it("takes the NodePort when one node answers, and logs the port and the nodes", async () => {
    const lines: string[] = [];
    const target = await chooseCanaryTarget(
      {
        port,
        candidates: [direct("w-1", "127.0.0.3"), direct("w-2", "127.0.0.2")],
        proxied: () => Promise.reject(new Error("not the path")),
        running: () => [],
        timeoutMs: 1_000,
        log: (l) => lines.push(l),
      },
      CHOICE,
    );
    expect(target.url).toBe(`http://127.0.0.2:${port}/hostname`);
    expect(target.checks).toContain(`GET http://127.0.0.2:${port}/hostname via NodePort ${port}`);
    expect(lines[0]).toMatch(
      new RegExp(`^the canary is asked on NodePort ${port} of w-2 127\\.0\\.0\\.2; not on w-1: `),
    );
    await target.check(new AbortController().signal);
  });

  it("asks again the nodes that did not answer yet, for retryForMs", async () => {
    const late = await freePortOn("127.0.0.6");
    let server: Server | undefined;
    setTimeout(() => {
      void serve("127.0.0.6", late, pod("p")).then((s) => (server = s));
    }, 150);
    const path = await chooseNodePortPath([direct("w-1", "127.0.0.6")], late, {
      timeoutMs: 500,
      retryForMs: 3_000,
      retryEveryMs: 50,
    });
    expect(path.nodes.map((n) => n.name)).toEqual(["w-1"]);
    await closeAll(server ? [server] : []);
  });
});

describe("the node a sample enters by", () => {
  const node = (name: string): NodePortNode => ({
    name,
    address: "127.0.0.1",
    via: "direct",
    connect: directConnect,
  });
  const nodes = [node("w-1"), node("w-2"), node("cp-1")];

  it("is the first node no step runs on", () => {
    expect(pickNode(nodes, []).name).toBe("w-1");
    expect(pickNode(nodes, ["w-1 drain"]).name).toBe("w-2");
    expect(pickNode(nodes, ["w-1 kubelet", "w-2 drain"]).name).toBe("cp-1");
  });

  it("is the first node when a step runs on every one", () => {
    expect(pickNode(nodes, ["w-1 drain", "w-2 drain", "cp-1 apply/control-plane"]).name).toBe(
      "w-1",
    );
  });

  it("avoids the node being drained: the sample reaches the Pod through another node", async () => {
    const port = await freePortOn("127.0.0.2");
    const servers = [
      await serve("127.0.0.2", port, (_req, res) => res.writeHead(503).end("draining")),
      await serve("127.0.0.3", port, pod("kubeforge-canary-b")),
    ];
    const path: NodePortNode[] = [
      { ...node("w-1"), address: "127.0.0.2" },
      { ...node("w-2"), address: "127.0.0.3" },
    ];
    let running: string[] = ["w-1 drain"];
    const target = nodePortTarget(path, port, 1_000, () => running);
    await expect(target.check(new AbortController().signal)).resolves.toBeUndefined();
    running = [];
    await expect(target.check(new AbortController().signal)).rejects.toThrow(
      `w-1 http://127.0.0.2:${port}/hostname answered 503: draining`,
    );
    await closeAll(servers);
  });
});

describe("how a NodePort sample's failure is sorted", () => {
  let port: number;
  const servers: Server[] = [];

  beforeAll(async () => {
    port = await freePortOn("127.0.0.2");
    // Reset: the connection is dropped without an answer.
    servers.push(await serve("127.0.0.2", port, (req) => req.socket.resetAndDestroy()));
    // No answer: the request hangs.
    servers.push(await serve("127.0.0.4", port, () => {}));
    servers.push(await serve("127.0.0.5", port, (_req, res) => res.writeHead(500).end("boom")));
  });
  afterAll(() => closeAll(servers));

  /** The error of one sample entering by `address` over `connect`. */
  async function failure(address: string, connect: Connect = directConnect): Promise<Error> {
    const target = nodePortTarget(
      [{ name: "w-1", address, via: "direct", connect }],
      port,
      300,
      () => [],
    );
    return target.check(new AbortController().signal).then(
      () => new Error("answered 200"),
      (e: Error) => e,
    );
  }

  const workloadFailure = (e: Error) => {
    expect(e).not.toBeInstanceOf(PathUnavailable);
    return e.message;
  };

  it("refused (no endpoints: kube-proxy's REJECT), reset, no answer, non-200: the workload's", async () => {
    expect(workloadFailure(await failure("127.0.0.3"))).toMatch(
      /^w-1 http:\/\/127\.0\.0\.3:\d+\/hostname: connect ECONNREFUSED/,
    );
    expect(workloadFailure(await failure("127.0.0.2"))).toMatch(/socket hang up|ECONNRESET/);
    expect(workloadFailure(await failure("127.0.0.4"))).toMatch(/no answer within 300 ms/);
    expect(workloadFailure(await failure("127.0.0.5"))).toMatch(/answered 500: boom$/);
  });

  it("a node that cannot be reached at all is PathUnavailable: the sample is not the workload's", async () => {
    for (const code of ["EHOSTUNREACH", "ENETUNREACH"]) {
      const e = await failure("127.0.0.3", failingConnect(errno(code)));
      expect(e, code).toBeInstanceOf(PathUnavailable);
      expect(e.message).toContain(code);
    }
  });

  it("over the node's SSH connection: refused is the workload's, no route or the connection gone is the path's", async () => {
    const sshHost = (err: Error) => ({ connectTo: () => Promise.reject(err) }) as unknown as Host;
    const through = (err: Error) => connectFrom(sshHost(err))!;
    const refused = await failure(
      "127.0.0.3",
      through(new Error("(SSH) Channel open failure: Connection refused")),
    );
    expect(workloadFailure(refused)).toMatch(/: Connection refused$/);
    for (const said of [
      "(SSH) Channel open failure: No route to host",
      "(SSH) Channel open failure: Network is unreachable",
      'w-1: the connection dropped earlier (timed out); cannot run "connection to 127.0.0.3:30080"',
    ]) {
      const e = await failure("127.0.0.3", through(new Error(said)));
      expect(e, said).toBeInstanceOf(PathUnavailable);
    }
    expect(connectFrom({} as Host)).toBeUndefined();
  });
});
