import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { ArtifactSources } from "../../src/node/artifacts/types.js";

// A local HTTPS server standing in for the three release locations of the node binaries, with
// their URL layouts (src/node/artifacts/catalog.ts):
//   <url>/dl/release/<v>/bin/linux/<arch>/{kubelet,kubectl}[.sha256]          (dl.k8s.io)
//   <url>/dl/ci/<v>/bin/linux/<arch>/{kubelet,kubectl}[.sha256]               (the CI bucket)
//   <url>/github/kubernetes-sigs/cri-tools/releases/download/<v>/crictl-<v>-linux-<arch>.tar.gz[.sha256]
//   <url>/github/containernetworking/plugins/releases/download/<v>/cni-plugins-linux-<arch>-<v>.tgz[.sha256]
// Like GitHub, the two github paths answer 302 to an /objects/ URL that serves the bytes.
// Checksum files have each source's own format: a bare hex digest for dl.k8s.io and cri-tools,
// sha256sum's "hex  name" for the CNI plugins. Payloads are real: binaries are copies of this
// machine's /bin/true (arm64 ones with the ELF header's e_machine set to AArch64) with a
// trailer naming the path, so every file has its own digest; archives are made with tar.
// Its certificate comes from a throwaway CA made with openssl (`ca`). Faults are set per path.

const execFileAsync = promisify(execFile);

export type Fault =
  /** The .sha256 file of this artifact path holds another file's digest. */
  | "tampered-checksum"
  /** 200 with an HTML error page (Content-Type text/html), as a misconfigured mirror does. */
  | "html"
  | "not-found"
  /** 500 on the first request, the real answer afterwards. */
  | "error-once"
  | "error-always"
  /** 302 to a /moved/ URL that serves the real answer. */
  | "redirect"
  /** 302 to itself, forever. */
  | "redirect-loop"
  /** Full Content-Length, half the body, then the connection is cut. */
  | "truncated"
  /** Headers never come. */
  | "hang"
  /** The body in ten pieces, 150 ms apart (a long download, in small). */
  | "slow";

export interface ReleaseServer {
  /** https://<address or name>:<port> */
  url: string;
  /** PEM of the CA that signed the server certificate. */
  ca: string;
  /** Base URLs for releaseArtifacts(version, arch, sources). */
  sources: ArtifactSources;
  /** Request paths, in arrival order. */
  requests: string[];
  /** How many requests a path received. */
  hits(path: string): number;
  /** Makes `path` (an artifact path, without .sha256) misbehave; `undefined` clears it. */
  fault(path: string, fault: Fault | undefined): void;
  /** The bytes a path serves when nothing is wrong (artifact or checksum file). */
  payload(path: string): Promise<Buffer>;
  /** Serves `body` at `path` (e.g. a custom kubelet); 200, application/octet-stream. */
  put(path: string, body: Buffer): void;
  /** An ELF payload for `arch` ("amd64" | "arm64") with `label` in its trailer. */
  elf(arch: string, label: string): Promise<Buffer>;
  close(): Promise<void>;
}

const ELF_MACHINE = { amd64: 62, arm64: 183 } as Record<string, number>;

async function makeCertificates(
  dir: string,
  address: string,
  name: string | undefined,
): Promise<{ ca: string; cert: string; key: string }> {
  const f = (n: string) => join(dir, n);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await execFileAsync("openssl", [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    f("ca.key"),
    "-out",
    f("ca.crt"),
    "-subj",
    "/CN=kubeforge release-server test CA",
    "-days",
    "2",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  await execFileAsync("openssl", [
    "req",
    ...ec,
    "-keyout",
    f("server.key"),
    "-out",
    f("server.csr"),
    "-subj",
    "/CN=localhost",
  ]);
  await writeFile(
    f("server.ext"),
    `subjectAltName=IP:${address},DNS:localhost${name ? `,DNS:${name}` : ""}\nextendedKeyUsage=serverAuth\n`,
  );
  await execFileAsync("openssl", [
    "x509",
    "-req",
    "-in",
    f("server.csr"),
    "-CA",
    f("ca.crt"),
    "-CAkey",
    f("ca.key"),
    "-CAcreateserial",
    "-out",
    f("server.crt"),
    "-days",
    "2",
    "-extfile",
    f("server.ext"),
  ]);
  return {
    ca: await readFile(f("ca.crt"), "utf8"),
    cert: await readFile(f("server.crt"), "utf8"),
    key: await readFile(f("server.key"), "utf8"),
  };
}

const K8S = /^\/dl\/(?:release|ci)\/(v[^/]+)\/bin\/linux\/([^/]+)\/(kubelet|kubectl)$/;
const CRICTL =
  /^\/github\/kubernetes-sigs\/cri-tools\/releases\/download\/(v[^/]+)\/crictl-(v[^/]+)-linux-([^/.]+)\.tar\.gz$/;
const CNI =
  /^\/github\/containernetworking\/plugins\/releases\/download\/(v[^/]+)\/cni-plugins-linux-([^/-]+)-(v[^/]+)\.tgz$/;

const HTML_PAGE =
  "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1><p>The mirror is having a bad day.</p></body></html>\n";

export interface ReleaseServerOptions {
  /** The IPv4 address it listens on and its certificate names (default 127.0.0.1). */
  address?: string;
  /**
   * A DNS name for its certificate and its URLs (https://<name>:<port>) instead of the address:
   * a name only a proxy resolves, for downloads that must go through the proxy.
   */
  name?: string;
}

export async function startReleaseServer(o: ReleaseServerOptions = {}): Promise<ReleaseServer> {
  const address = o.address ?? "127.0.0.1";
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-release-server-"));
  const tls = await makeCertificates(dir, address, o.name);
  const trueBytes = await readFile("/bin/true");
  const requests: string[] = [];
  const faults = new Map<string, Fault>();
  const served = new Map<string, number>();
  const extra = new Map<string, Buffer>();
  const artifacts = new Map<string, Promise<Buffer>>();
  const sockets = new Set<Socket>();

  const elf = (arch: string, label: string): Promise<Buffer> => {
    const machine = ELF_MACHINE[arch];
    if (machine === undefined)
      return Promise.reject(new Error(`release-server: no ELF for ${arch}`));
    const bytes = Buffer.concat([trueBytes, Buffer.from(`\n#kubeforge-test ${label}\n`)]);
    bytes.writeUInt16LE(machine, 18);
    return Promise.resolve(bytes);
  };

  let tarCount = 0;
  /** A gzip tarball of `files` (name → content, mode), made by tar like the releases are. */
  const tarball = async (
    files: { name: string; body: Buffer; mode: number }[],
    asDotEntries: boolean,
  ): Promise<Buffer> => {
    const work = join(dir, `tar-${++tarCount}`);
    await mkdir(work);
    for (const f of files) {
      await writeFile(join(work, f.name), f.body);
      await chmod(join(work, f.name), f.mode);
    }
    const out = `${work}.tgz`;
    // CNI: `tar -C bin -caf FILE .` (./bridge ...); cri-tools: `tar zcf FILE -C dir crictl`.
    const members = asDotEntries ? ["."] : files.map((f) => f.name);
    await execFileAsync("tar", ["-czf", out, "--owner=0", "--group=0", "-C", work, ...members]);
    return readFile(out);
  };

  /** The real bytes of an artifact path, or undefined for paths the layout does not have. */
  const artifact = (path: string): Promise<Buffer> | undefined => {
    const known = artifacts.get(path);
    if (known) return known;
    let made: Promise<Buffer> | undefined;
    let m: RegExpExecArray | null;
    if ((m = K8S.exec(path))) {
      made = elf(m[2]!, path);
    } else if ((m = CRICTL.exec(path)) && m[1] === m[2]) {
      const arch = m[3]!;
      made = elf(arch, path).then((body) =>
        tarball([{ name: "crictl", body, mode: 0o755 }], false),
      );
    } else if ((m = CNI.exec(path)) && m[1] === m[3]) {
      const arch = m[2]!;
      made = Promise.all(
        ["bridge", "host-local", "loopback", "portmap"].map(async (name) => ({
          name,
          body: await elf(arch, `${path} ${name}`),
          mode: 0o755,
        })),
      ).then((bins) =>
        tarball(
          [...bins, { name: "LICENSE", body: Buffer.from("Apache-2.0\n"), mode: 0o644 }],
          true,
        ),
      );
    }
    if (made) artifacts.set(path, made);
    return made;
  };

  const checksumText = (artifactPath: string, body: Buffer): string => {
    const tampered = faults.get(artifactPath) === "tampered-checksum";
    const hex = createHash("sha256")
      .update(tampered ? Buffer.concat([body, Buffer.from("tampered")]) : body)
      .digest("hex");
    // CNI plugins: sha256sum's "hex  name"; dl.k8s.io and cri-tools: the bare digest.
    return CNI.test(artifactPath) ? `${hex}  ${artifactPath.replace(/^.*\//, "")}\n` : `${hex}\n`;
  };

  /** The normal answer for a path: its bytes, or undefined (404). */
  const normal = async (path: string): Promise<{ body: Buffer; type: string } | undefined> => {
    const put = extra.get(path);
    if (put) return { body: put, type: "application/octet-stream" };
    if (path.endsWith(".sha256")) {
      const base = path.slice(0, -".sha256".length);
      const body = await artifact(base);
      return body ? { body: Buffer.from(checksumText(base, body)), type: "text/plain" } : undefined;
    }
    const body = await artifact(path);
    return body ? { body, type: "application/octet-stream" } : undefined;
  };

  const send = (res: ServerResponse, status: number, body: Buffer | string, type: string) => {
    const bytes = typeof body === "string" ? Buffer.from(body) : body;
    res.writeHead(status, { "content-type": type, "content-length": bytes.length });
    res.end(bytes);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "https://localhost");
    let path = url.pathname;
    requests.push(path);
    served.set(path, (served.get(path) ?? 0) + 1);

    if (path.startsWith("/objects/")) {
      path = decodeURIComponent(path.slice("/objects/".length));
    } else if (path.startsWith("/moved/")) {
      path = decodeURIComponent(path.slice("/moved/".length));
    } else {
      const fault = faults.get(path);
      switch (fault) {
        case "html":
          return send(res, 200, HTML_PAGE, "text/html; charset=utf-8");
        case "not-found":
          return send(res, 404, "Not Found\n", "text/plain");
        case "error-always":
          return send(res, 500, "Internal Server Error\n", "text/plain");
        case "error-once":
          if (served.get(path) === 1)
            return send(res, 500, "Internal Server Error\n", "text/plain");
          break;
        case "redirect":
          res.writeHead(302, { location: `/moved/${encodeURIComponent(path)}` });
          return void res.end();
        case "redirect-loop":
          res.writeHead(302, { location: path });
          return void res.end();
        case "hang":
          return;
        case "slow": {
          const answer = await normal(path);
          if (!answer) break;
          res.writeHead(200, {
            "content-type": answer.type,
            "content-length": answer.body.length,
          });
          const piece = Math.ceil(answer.body.length / 10);
          for (let at = 0; at < answer.body.length; at += piece) {
            if (res.destroyed) return;
            res.write(answer.body.subarray(at, at + piece));
            await new Promise((r) => setTimeout(r, 150));
          }
          return void res.end();
        }
        case "truncated": {
          const answer = await normal(path);
          if (!answer) break;
          res.writeHead(200, {
            "content-type": answer.type,
            "content-length": answer.body.length,
          });
          res.write(answer.body.subarray(0, Math.floor(answer.body.length / 2)));
          // Cut the connection once the half is on its way.
          setTimeout(() => req.socket.destroy(), 20);
          return;
        }
        default:
          break;
      }
      // GitHub release downloads answer with a redirect to their object store.
      if (path.startsWith("/github/") && (await normal(path))) {
        res.writeHead(302, { location: `/objects/${encodeURIComponent(path)}` });
        return void res.end();
      }
    }
    const answer = await normal(path);
    if (!answer) return send(res, 404, "Not Found\n", "text/plain");
    send(res, 200, answer.body, answer.type);
  };

  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) send(res, 599, String(e), "text/plain");
      else res.destroy();
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const { port } = server.address() as { port: number };
  const url = `https://${o.name ?? address}:${port}`;

  return {
    url,
    ca: tls.ca,
    sources: {
      kubernetes: `${url}/dl/release`,
      kubernetesCI: `${url}/dl/ci`,
      crictl: `${url}/github/kubernetes-sigs/cri-tools/releases/download`,
      cniPlugins: `${url}/github/containernetworking/plugins/releases/download`,
    },
    requests,
    hits: (path) => served.get(path) ?? 0,
    fault: (path, fault) => {
      if (fault) faults.set(path, fault);
      else faults.delete(path);
    },
    payload: async (path) => {
      const answer = await normal(path);
      if (!answer) throw new Error(`release-server: nothing at ${path}`);
      return answer.body;
    },
    put: (path, body) => void extra.set(path, body),
    elf,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
