import { exec } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { RunningContainer } from "./containers.js";

// SIMULATION (test double). The part of Kubernetes' e2e test image agnhost that kubeforge's
// canary runs: `agnhost netexec --http-port=P` serving HTTP on the Pod's IP.
// k8s: test/images/agnhost/README.md and test/images/agnhost/netexec/netexec.go —
// "/" and "/echo?msg=" echo, "/hostname" (and "/hostName") answers os.Hostname() (the Pod's
// name), "/clientip" the caller's host:port, "/healthz" 200, "/shell?cmd=" (or ?shellCommand=)
// runs the command with `sh -c` and answers JSON {"output", "error"} (see shell below).
// SIMULATION LIMITS: the command of /shell runs in the node's namespaces (no container image: the
// tools are the testbed host's); the other netexec endpoints (/dial, /upload, /exit, UDP, SCTP,
// HTTPS) are not served.

/** netexec's --http-port from the container's argv (default 8080), or undefined for another agnhost command. */
export function netexecPort(argv: string[]): number | undefined {
  const i = argv.indexOf("netexec");
  if (i < 0) return undefined;
  let port = 8080;
  for (let j = i + 1; j < argv.length; j++) {
    const a = argv[j]!;
    const m = /^--http-port(?:=(\d+))?$/.exec(a);
    if (m) port = Number(m[1] ?? argv[++j]);
  }
  return port;
}

/**
 * netexec.go shellHandler: `sh -c cmd`, its combined output as "output" (left out when empty)
 * and the error as "error" (left out when none: Go's exec.ExitError text, "exit status N"),
 * answered 200 either way (417 only when the JSON cannot be made, which a map of strings never
 * meets). Its README's "417 Expectation Failed if not" is not what the handler does.
 */
function shell(cmd: string): Promise<{ output?: string; error?: string }> {
  return new Promise((resolve) => {
    exec(cmd, { timeout: 30_000, shell: "/bin/sh" }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      const error = !err
        ? undefined
        : typeof err.code === "number"
          ? `exit status ${err.code}`
          : err.message;
      resolve({
        ...(output ? { output } : {}),
        ...(error !== undefined ? { error } : {}),
      });
    });
  });
}

/** The netexec handler: `podName` is what /hostname answers. */
export function netexecHandler(podName: string) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://pod");
    switch (url.pathname) {
      case "/hostname":
      case "/hostName":
        return res.writeHead(200).end(podName);
      case "/healthz":
        return res.writeHead(200).end();
      case "/clientip":
        return res.writeHead(200).end(`${req.socket.remoteAddress}:${req.socket.remotePort}`);
      case "/":
      case "/echo":
        return res.writeHead(200).end(url.searchParams.get("msg") ?? "");
      case "/shell":
        return void shell(
          url.searchParams.get("shellCommand") || (url.searchParams.get("cmd") ?? ""),
        ).then((body) => res.writeHead(200).end(JSON.stringify(body)));
      default:
        return res.writeHead(404).end("404 page not found\n");
    }
  };
}

/** Starts netexec on ip:port; the container runs until stopped. */
export async function startNetexec(
  podName: string,
  ip: string,
  port: number,
): Promise<RunningContainer> {
  const server: Server = createServer(netexecHandler(podName));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, ip, () => resolve());
  });
  let resolveExit!: (v: { code: number | null; reason: string }) => void;
  const exited = new Promise<{ code: number | null; reason: string }>((r) => (resolveExit = r));
  return {
    exited,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      resolveExit({ code: 0, reason: "Completed" });
    },
  };
}
