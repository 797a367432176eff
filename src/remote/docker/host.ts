import { Duplex, PassThrough } from "node:stream";
import { joinHostPort } from "../../config/network.js";
import type {
  ExecOptions,
  ExecResult,
  FileStat,
  FileWrite,
  Forward,
  Host,
  HostFacts,
} from "../host.js";
import { nodeArch } from "../ssh/host.js";
import { openLocalForward, type LocalForward } from "../ssh/forward.js";
import { ShellFiles } from "../ssh/shell-files.js";
import type { DockerEngine } from "./engine.js";
import { containerExec } from "./exec.js";

// A node that is a container on the runner's Docker engine, behind the Host port: commands are
// execs (as root: a node container's commands need no sudo), files go through the same small
// shell scripts as over SSH (ssh/shell-files.ts: contents on stdin, paths as arguments), and a
// port forward is one exec of socat per connection, which connects from inside the container
// (its loopback: the kubelet's healthz, the node-local API proxy).

const FACTS = [
  "uname -n",
  "uname -m",
  "uname -r",
  "getconf _NPROCESSORS_ONLN",
  "awk '/^MemTotal:/ { print $2 }' /proc/meminfo",
].join("; ");

export class DockerHost implements Host {
  readonly name: string;
  /** "cp-1 (container kubeforge-ci-cp-1)": how messages name this host. */
  readonly label: string;
  private readonly files: ShellFiles;
  private readonly forwards = new Set<LocalForward>();

  constructor(
    private readonly engine: DockerEngine,
    /** The container's name on the engine. */
    readonly container: string,
    name: string,
    private readonly log: (line: string) => void = () => {},
  ) {
    this.name = name;
    this.label = `${name} (container ${container})`;
    this.files = new ShellFiles(this.label, (argv, stdin) =>
      containerExec(engine, container, this.label, argv, stdin ? { stdin } : {}),
    );
  }

  async exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (argv.length === 0) throw new Error(`${this.label}: exec needs a command`);
    const r = await containerExec(this.engine, this.container, this.label, argv, {
      ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return { code: r.code, stdout: r.stdout.toString(), stderr: r.stderr };
  }

  readFile(path: string): Promise<Buffer> {
    return this.files.readFile(path);
  }
  writeFile(path: string, data: string | Buffer, mode: number): Promise<void> {
    return this.files.writeFile(path, data, mode);
  }
  writeFiles(files: readonly FileWrite[]): Promise<void> {
    return this.files.writeFiles(files);
  }
  mkdirp(path: string, mode?: number): Promise<void> {
    return this.files.mkdirp(path, mode);
  }
  exists(path: string): Promise<boolean> {
    return this.files.exists(path);
  }
  stat(path: string): Promise<FileStat | undefined> {
    return this.files.stat(path);
  }
  readDir(path: string): Promise<string[]> {
    return this.files.readDir(path);
  }
  remove(path: string, opts?: { recursive?: boolean }): Promise<void> {
    return this.files.remove(path, opts);
  }
  copyTree(src: string, dst: string): Promise<void> {
    return this.files.copyTree(src, dst);
  }
  rename(from: string, to: string): Promise<void> {
    return this.files.rename(from, to);
  }
  renameAll(moves: readonly (readonly [string, string])[]): Promise<void> {
    return this.files.renameAll(moves);
  }

  async hostname(): Promise<string> {
    const r = await this.exec(["uname", "-n"]);
    if (r.code !== 0) throw new Error(`${this.label}: uname -n failed: ${r.stderr.trim()}`);
    return r.stdout.trim();
  }

  async facts(): Promise<HostFacts> {
    const r = await this.exec(["sh", "-c", FACTS], { timeoutMs: 30_000 });
    const lines = r.stdout.trim().split("\n");
    const [hostname, machine, kernelRelease, cpus, memKiB] = lines;
    if (r.code !== 0 || lines.length !== 5) {
      throw new Error(
        `${this.label}: cannot read the node's facts: ${r.stderr.trim() || r.stdout}`,
      );
    }
    return {
      hostname: hostname!,
      arch: nodeArch(machine!),
      kernelRelease: kernelRelease!,
      cpuCount: Number(cpus),
      memoryBytes: Number(memKiB) * 1024,
      uid: 0,
      rootAccess: true,
    };
  }

  /** `docker inspect` of the container, for diagnostics. */
  async inspect(): Promise<string> {
    const info = await this.engine.inspectContainer(this.container);
    return `${JSON.stringify(info ?? { missing: this.container }, null, 2)}\n`;
  }

  /** One connection to targetHost:targetPort made from inside the container (socat). */
  async connectTo(targetHost: string, targetPort: number): Promise<Duplex> {
    const argv = ["socat", "STDIO", `TCP:${joinHostPort(targetHost, targetPort)}`];
    const id = await this.engine.createExec(this.container, argv, true);
    const stream = await this.engine.startExec(id, true);
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    this.engine.demux(stream, stdout, stderr);
    stderr.resume();
    const pair = new Duplex({
      write(chunk: Buffer, _enc, done) {
        stream.write(chunk, done);
      },
      final(done) {
        stream.end();
        done();
      },
      read() {
        stdout.resume();
      },
      destroy(err, done) {
        stream.destroy();
        done(err);
      },
    });
    stdout.on("data", (b: Buffer) => {
      if (!pair.push(b)) stdout.pause();
    });
    stream.once("end", () => pair.push(null));
    stream.once("close", () => pair.destroy());
    stream.on("error", (e: Error) => pair.destroy(e));
    return pair;
  }

  async forward(targetHost: string, targetPort: number): Promise<Forward> {
    let said: string | undefined;
    const f = await openLocalForward(
      () => this.connectTo(targetHost, targetPort),
      (m) => {
        if (m === said) return;
        said = m;
        this.log(`${this.label}: forward to ${targetHost}:${targetPort}: ${m}`);
      },
    );
    this.forwards.add(f);
    return {
      port: f.port,
      close: async () => {
        this.forwards.delete(f);
        await f.close();
      },
    };
  }

  /** Ends the forwards; the container stays (down removes it). */
  async close(): Promise<void> {
    const open = [...this.forwards];
    this.forwards.clear();
    await Promise.all(open.map((f) => f.close()));
  }
}
