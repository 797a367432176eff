import { constants as osConstants } from "node:os";
import type { Duplex } from "node:stream";
import type { Client as SshClient, ClientChannel } from "ssh2";
import type {
  ExecOptions,
  ExecResult,
  FileStat,
  FileWrite,
  Forward,
  Host,
  HostFacts,
} from "../host.js";
import { connect, type ConnectSettings, type ConnectTarget } from "./connection.js";
import { SshError, endpointUrl, hostLabel } from "./errors.js";
import { openLocalForward, type LocalForward } from "./forward.js";
import { ProcessGroupReport, killGroupCommand, reportingProcessGroup } from "./process-group.js";
import { Semaphore } from "./semaphore.js";
import { ShellFiles, type RawResult } from "./shell-files.js";
import {
  KILL_AFTER_SECONDS,
  TIMED_OUT_CODE,
  cancelledError,
  displayCommand,
} from "../command-limits.js";
import { cancellable, pause } from "../interruption.js";
import { SUDO_PROBE_SCRIPT, parseSudoProbe, remoteCommand, type SudoMode } from "./sudo.js";
import type { SshEndpoint, SshHostOptions } from "./types.js";
import { quoteValue } from "../../config/values.js";

// A machine reached over SSH (ssh2): commands on exec channels, files through small shell
// scripts on those channels (so they work through sudo), port forwards on direct-tcpip
// channels. One connection per host; at most `maxSessions` session channels open at once,
// below OpenSSH's MaxSessions (10), past which the server refuses channels (mscdex/ssh2#222).

const DEFAULTS = {
  connectTimeoutMs: 15_000,
  keepaliveIntervalMs: 10_000,
  keepaliveCountMax: 3,
  retries: 3,
  retryDelayMs: 1_000,
  maxSessions: 8,
};

/** Exit statuses recorded as soon as a channel exists (see openChannel). */
const exitStatuses = new WeakMap<ClientChannel, { code: number }>();

/** Exit code reported when kubeforge ended a command at its time limit (coreutils `timeout`'s). */
export { TIMED_OUT_CODE };

// A session channel past MaxSessions is refused ("open failed": OpenSSH answers
// SSH_OPEN_CONNECT_FAILED, RFC 4254 5.1 reason 2; other servers ADMINISTRATIVELY_PROHIBITED, 1).
// A channel that just closed can still count there for a moment, so a refusal is retried.
const SESSION_REFUSED = new Set([1, 2]);
const CHANNEL_OPEN_ATTEMPTS = 8;

interface InFlight {
  command: string;
  fail(error: SshError): void;
}

type State = { kind: "open" } | { kind: "dropped"; reason: string } | { kind: "closed" };

// uname -m → Node's process.arch names.
const ARCH: Record<string, string> = {
  x86_64: "x64",
  amd64: "x64",
  aarch64: "arm64",
  arm64: "arm64",
  armv7l: "arm",
  armv6l: "arm",
  i386: "ia32",
  i686: "ia32",
  ppc64le: "ppc64",
  ppc64: "ppc64",
  s390x: "s390x",
  riscv64: "riscv64",
  loongarch64: "loong64",
  mips64: "mips64el",
};

/** Node's process.arch name for a `uname -m` machine name (unknown names pass through). */
export function nodeArch(unameMachine: string): string {
  return ARCH[unameMachine] ?? unameMachine;
}

const FACTS_SCRIPT = [
  "uname -n",
  "uname -m",
  "uname -r",
  "getconf _NPROCESSORS_ONLN",
  "awk '/^MemTotal:/ { print $2 }' /proc/meminfo",
  "id -u",
].join("; ");

function signalCode(name: string | undefined): number {
  const n = name ? (osConstants.signals as Record<string, number>)[`SIG${name}`] : undefined;
  return 128 + (n ?? 15);
}

/** Options a connection cannot start with: one sentence naming the option. */
function checkOptions(opts: SshHostOptions): void {
  const bad = (what: string, value: unknown) => {
    throw new Error(`${opts.name}: SSH option ${what}, got ${quoteValue(value)}`);
  };
  for (const [where, e] of [
    ["endpoint", opts.endpoint],
    ["jump.endpoint", opts.jump?.endpoint],
  ] as const) {
    if (!e) continue;
    if (!e.host) bad(`${where}.host must not be empty`, e.host);
    if (!e.user) bad(`${where}.user must not be empty`, e.user);
    if (!Number.isInteger(e.port) || e.port < 1 || e.port > 65535) {
      bad(`${where}.port must be a port number (1-65535)`, e.port);
    }
  }
  const whole = (name: keyof SshHostOptions, min: number) => {
    const v = opts[name];
    if (v !== undefined && (!Number.isInteger(v) || (v as number) < min)) {
      bad(`${name} must be a whole number ≥ ${min}`, v);
    }
  };
  // sudo -S reads the password up to the first new line; the rest would be the command's input
  // (the Cluster's decoding drops one trailing new line, and names the field). Never quoted.
  if (opts.sudoPassword !== undefined && /[\r\n]/.test(opts.sudoPassword)) {
    throw new Error(`${opts.name}: SSH option sudoPassword must be one line; it holds a new line`);
  }
  whole("maxSessions", 1);
  whole("retries", 0);
  whole("keepaliveCountMax", 1);
  whole("connectTimeoutMs", 1);
  whole("keepaliveIntervalMs", 1);
  whole("retryDelayMs", 0);
}

/**
 * Sends a signal request on a session channel. ssh2's channel.signal() drops it once the channel's
 * EOF is sent (Channel.js sends requests only while `outgoing.state` is "open"), and kubeforge
 * sends EOF on every command's stdin at once; RFC 4254 (5.3) lets a party send channel requests
 * after its EOF, so the request goes through the channel's protocol object.
 */
function signalChannel(channel: ClientChannel, name: string): void {
  const c = channel as unknown as {
    outgoing?: { id: number; state: string };
    _client?: { _protocol?: { signal(id: number, name: string): void } };
  };
  const protocol = c._client?._protocol;
  if (!protocol || !c.outgoing) return channel.signal(name);
  if (c.outgoing.state === "open" || c.outgoing.state === "eof") {
    protocol.signal(c.outgoing.id, name);
  }
}

/** Asks sshd to end the channel's command (TERM, which sudo relays) and closes the channel. */
function stopChannel(channel: ClientChannel): void {
  try {
    signalChannel(channel, "TERM");
  } catch {
    /* the connection is going away */
  }
  channel.close();
}

/** Waits for an ssh2 client to close, ending it politely first and forcing it after a while. */
function endClient(client: SshClient, isClosed: () => boolean): Promise<void> {
  if (isClosed()) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.destroy();
      resolve();
    }, 2_000);
    client.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
    client.end();
  });
}

export class SshHost implements Host {
  readonly name: string;
  readonly hostKeyFingerprint: string;
  readonly endpoint: SshEndpoint;
  /** "cp-1 (ssh://ubuntu@203.0.113.10:22)": how messages name this host. */
  readonly label: string;
  private loginUid = -1;
  private sudoMode: SudoMode = { kind: "unavailable", reason: "sudo was not probed yet" };

  private state: State = { kind: "open" };
  private readonly inFlight = new Set<InFlight>();
  private readonly sessions: Semaphore;
  private readonly forwards = new Set<LocalForward>();
  private readonly files: ShellFiles;
  private readonly log: (line: string) => void;
  private readonly sudoPassword: string | undefined;
  private closing: Promise<void> | undefined;
  private clientClosed = false;
  private jumpClosed = false;

  /** Connects (through the jump host when given), checks the host key, authenticates, probes sudo. */
  static async connect(opts: SshHostOptions): Promise<SshHost> {
    checkOptions(opts);
    const label = hostLabel(opts.name, opts.endpoint);
    const log = opts.log ?? (() => {});
    const settings: ConnectSettings = {
      connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
      keepaliveIntervalMs: opts.keepaliveIntervalMs ?? DEFAULTS.keepaliveIntervalMs,
      keepaliveCountMax: opts.keepaliveCountMax ?? DEFAULTS.keepaliveCountMax,
      retries: opts.retries ?? DEFAULTS.retries,
      retryDelayMs: opts.retryDelayMs ?? DEFAULTS.retryDelayMs,
      log,
      ...(opts.signal ? { signal: opts.signal } : {}),
    };
    let jump: SshClient | undefined;
    let jumpClosed = false;
    if (opts.jump) {
      const jumpTarget: ConnectTarget = {
        name: opts.name,
        prefix: `${label}: jump host ${endpointUrl(opts.jump.endpoint)}: `,
        endpoint: opts.jump.endpoint,
        credentials: opts.jump.credentials,
        hostKeys: opts.jump.hostKeys,
      };
      jump = (await connect(jumpTarget, settings)).client;
      jump.once("close", () => (jumpClosed = true));
    }
    const target: ConnectTarget = {
      name: opts.name,
      prefix: `${label}: `,
      endpoint: opts.endpoint,
      credentials: opts.credentials,
      hostKeys: opts.hostKeys,
      ...(opts.jump ? { via: endpointUrl(opts.jump.endpoint) } : {}),
    };
    const viaJump = jump;
    const openStream = viaJump
      ? () =>
          new Promise<Duplex>((resolve, reject) => {
            try {
              viaJump.forwardOut(
                "127.0.0.1",
                0,
                opts.endpoint.host,
                opts.endpoint.port,
                (err, s) => (err ? reject(err) : resolve(s)),
              );
            } catch (e) {
              reject(e instanceof Error ? e : new Error(String(e)));
            }
          })
      : undefined;
    let connected;
    try {
      connected = await connect(target, settings, openStream);
    } catch (e) {
      if (jump) await endClient(jump, () => jumpClosed);
      throw e;
    }
    const host = new SshHost(opts, label, connected.client, connected.fingerprint, jump, log);
    if (jump && jumpClosed) host.jumpClosed = true;
    try {
      const { uid, sudo } = await host.probeSudo();
      host.loginUid = uid;
      host.sudoMode = sudo;
    } catch (e) {
      await host.close();
      throw e;
    }
    return host;
  }

  private constructor(
    opts: SshHostOptions,
    label: string,
    private readonly client: SshClient,
    fingerprint: string,
    private readonly jump: SshClient | undefined,
    log: (line: string) => void,
  ) {
    this.name = opts.name;
    this.endpoint = opts.endpoint;
    this.label = label;
    this.hostKeyFingerprint = fingerprint;
    this.log = log;
    this.sudoPassword = opts.sudoPassword;
    this.sessions = new Semaphore(opts.maxSessions ?? DEFAULTS.maxSessions);
    this.files = new ShellFiles(label, (argv, stdin) => this.rawExec(argv, { sudo: true, stdin }));

    let lastError: Error | undefined;
    client.on("error", (e: Error) => (lastError = e));
    client.once("close", () => {
      this.clientClosed = true;
      this.lost(lastError ? lastError.message : "the server closed the connection");
    });
    if (jump) {
      jump.on("error", (e: Error) => (lastError = e));
      jump.once("close", () => {
        this.jumpClosed = true;
        this.lost("the jump host connection closed");
      });
    }
  }

  /** The login's uid (0 = root). */
  get uid(): number {
    return this.loginUid;
  }

  /** How commands become root: already root, `sudo -n`, `sudo -S` with the password, or not at all. */
  get sudo(): SudoMode {
    return this.sudoMode;
  }

  // ---- commands --------------------------------------------------------------------------

  async exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (argv.length === 0) throw new Error(`${this.label}: exec needs a command`);
    const r = await this.rawExec(argv, opts);
    return { code: r.code, stdout: r.stdout.toString(), stderr: r.stderr };
  }

  private async rawExec(
    argv: string[],
    opts: { sudo?: boolean; stdin?: string | Buffer; timeoutMs?: number; signal?: AbortSignal },
  ): Promise<RawResult> {
    const display = displayCommand(argv);
    let sudo: SudoMode | undefined;
    if (opts.sudo) {
      sudo = this.sudo;
      if (sudo.kind === "unavailable") {
        throw new SshError(
          this.name,
          "sudo",
          `${this.label}: ${sudo.reason}; cannot run "${display}" as root`,
        );
      }
    }
    let stdin = opts.stdin === undefined ? undefined : Buffer.from(opts.stdin);
    if (sudo?.kind === "password") {
      // Written once, ahead of the command's own input; sudo reads exactly one line.
      stdin = Buffer.concat([
        Buffer.from(`${this.sudoPassword ?? ""}\n`),
        stdin ?? Buffer.alloc(0),
      ]);
    }
    const command = remoteCommand(argv, {
      ...(sudo ? { sudo } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    });
    // Every command can be cancelled: by the caller, or when the run is interrupted.
    const signal = cancellable(opts.signal);
    if (this.loginUid === 0) {
      // sshd refuses signal requests on root logins: the command reports its process group.
      const group = new ProcessGroupReport();
      const reporting = reportingProcessGroup(command);
      return this.runChannel(reporting, display, stdin, opts.timeoutMs, signal, group);
    }
    return this.runChannel(command, display, stdin, opts.timeoutMs, signal);
  }

  /**
   * Sends a signal to a command's process group from a second channel (root logins only). The
   * channel is opened outside the session limit: the cancelled commands may hold every slot
   * until they end, and the default limit leaves OpenSSH's MaxSessions two to spare.
   */
  private signalProcessGroup(pgid: number, signal: "TERM" | "KILL"): void {
    if (this.state.kind !== "open") return;
    const command = killGroupCommand(pgid, signal);
    this.openChannel(command, command).then(
      (ch) => {
        ch.on("error", () => {});
        ch.stderr.resume();
        ch.resume();
        ch.end();
      },
      () => {
        /* the command then ends at its time limit */
      },
    );
  }

  private unavailable(display: string): SshError {
    const why =
      this.state.kind === "closed"
        ? "the connection is closed"
        : `the connection dropped earlier (${this.state.kind === "dropped" ? this.state.reason : ""})`;
    return new SshError(this.name, "dropped", `${this.label}: ${why}; cannot run "${display}"`);
  }

  private async runChannel(
    command: string,
    display: string,
    stdin: Buffer | undefined,
    timeoutMs: number | undefined,
    signal?: AbortSignal,
    group?: ProcessGroupReport,
  ): Promise<RawResult> {
    if (signal?.aborted) throw cancelledError(this.label, display, signal);
    if (this.state.kind !== "open") throw this.unavailable(display);
    let release: () => void;
    try {
      release = await this.sessions.acquire();
    } catch {
      throw this.unavailable(display);
    }
    // Before the exec request: the remote command, and its `timeout`, may start before the
    // channel's confirmation arrives here on a loaded machine.
    const startedAt = Date.now();
    let channel: ClientChannel;
    try {
      channel = await this.openChannel(command, display);
    } catch (e) {
      release();
      throw e;
    }
    return new Promise<RawResult>((resolve, reject) => {
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let settled = false;
      const entry: InFlight = {
        command: display,
        fail: (e) => finish(() => reject(e)),
      };
      const finish = (how: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.inFlight.delete(entry);
        how();
      };
      // Cancelled: sshd sends TERM to the session's process group, sudo relays it to the
      // command (a KILL would end sudo alone and orphan the root command), which under sudo is
      // always `timeout`: it passes the TERM to its own group and sends KILL a few seconds
      // later. On a root login, where sshd refuses signal requests, kubeforge sends TERM to
      // the reported process group itself, and KILL a few seconds later if it is still there. The answer comes once the channel has closed, which sshd
      // does when the command is gone, or when kubeforge stops waiting a little after that.
      let aborted = false;
      let closed = false;
      let groupSignalled = false;
      const signalGroup = () => {
        if (!aborted || groupSignalled || group?.pgid === undefined) return;
        groupSignalled = true;
        const pgid = group.pgid;
        this.signalProcessGroup(pgid, "TERM");
        const kill = setTimeout(() => {
          if (!closed) this.signalProcessGroup(pgid, "KILL");
        }, KILL_AFTER_SECONDS * 1000);
        kill.unref();
      };
      const onAbort = () => {
        aborted = true;
        if (group) signalGroup();
        else stopChannel(channel);
        const giveUp = setTimeout(
          () => {
            stopChannel(channel);
            finish(() => reject(cancelledError(this.label, display, signal!)));
          },
          (KILL_AFTER_SECONDS + 1) * 1000,
        );
        giveUp.unref();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      if (signal?.aborted) onAbort(); // while it waited for a session slot
      this.inFlight.add(entry);

      // The slot is given back when the channel is really closed, not when we stop waiting:
      // until then sshd still counts the session.
      let safety: NodeJS.Timeout | undefined;
      channel.once("close", () => {
        closed = true;
        clearTimeout(safety);
        release();
        // Let a connection loss that closed this channel be seen first.
        setImmediate(() =>
          finish(() => {
            if (aborted) return reject(cancelledError(this.label, display, signal!));
            if (this.state.kind !== "open") return reject(this.droppedWhile(display));
            if (group) err.push(group.rest());
            const stderr = Buffer.concat(err).toString();
            const code = exitStatuses.get(channel)?.code ?? 255;
            // The remote `timeout` may end the command before this side's timer fires.
            const limitReached =
              timeoutMs !== undefined &&
              code === TIMED_OUT_CODE &&
              Date.now() - startedAt >= timeoutMs;
            resolve({
              code,
              stdout: Buffer.concat(out),
              stderr: limitReached
                ? `${stderr}timed out after ${timeoutMs} ms`
                : exitStatuses.has(channel)
                  ? stderr
                  : `${stderr}the remote command ended without an exit status`,
            });
          }),
        );
      });
      channel.on("data", (b: Buffer) => out.push(b));
      channel.stderr.on("data", (b: Buffer) => {
        if (!group) return err.push(b);
        err.push(group.feed(b));
        signalGroup(); // a cancel that came before the report
      });
      channel.on("error", () => {
        /* reported through close */
      });

      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              // The remote `timeout` ends the process tree (it runs as root under sudo); the
              // signal request and the close are the fast path for the session itself.
              stopChannel(channel);
              safety = setTimeout(release, (KILL_AFTER_SECONDS + 10) * 1000);
              safety.unref();
              finish(() =>
                resolve({
                  code: TIMED_OUT_CODE,
                  stdout: Buffer.concat(out),
                  stderr: `${Buffer.concat(err).toString()}timed out after ${timeoutMs} ms`,
                }),
              );
            }, timeoutMs);
      channel.end(stdin ?? Buffer.alloc(0));
    });
  }

  private droppedWhile(display: string): SshError {
    const reason = this.state.kind === "dropped" ? ` (${this.state.reason})` : "";
    const what =
      this.state.kind === "closed" ? "the connection was closed" : "the connection dropped";
    return new SshError(
      this.name,
      "dropped",
      `${this.label}: ${what} while running "${display}"${reason}`,
    );
  }

  private async openChannel(command: string, display: string): Promise<ClientChannel> {
    for (let attempt = 1; ; attempt++) {
      if (this.state.kind !== "open") throw this.unavailable(display);
      try {
        return await new Promise<ClientChannel>((resolve, reject) => {
          this.client.exec(command, (err, ch) => {
            if (err) return reject(err);
            // ssh2 parses a whole packet batch synchronously: for a quick command the exit
            // status can arrive before the awaiting caller resumes and attaches listeners, and
            // an "exit" event nobody listens to is lost. Record it here, in the same tick.
            ch.on("exit", (code: number | null, signal?: string) => {
              exitStatuses.set(ch, { code: code ?? signalCode(signal) });
            });
            resolve(ch);
          });
        });
      } catch (e) {
        const err = e as Error & { reason?: number };
        if (this.state.kind !== "open") throw this.droppedWhile(display);
        // ssh2's answer once its socket can no longer be written: the connection is gone,
        // though its close has not reached this side yet.
        if (err.message === "Not connected") {
          throw new SshError(
            this.name,
            "dropped",
            `${this.label}: the connection dropped; cannot run "${display}"`,
            { cause: err },
          );
        }
        if (SESSION_REFUSED.has(err.reason ?? 0) && attempt < CHANNEL_OPEN_ATTEMPTS) {
          await pause(Math.min(1000, 25 * 2 ** attempt)).catch((e: unknown) =>
            Promise.reject(new Error(`${this.label}: cancelled "${display}"`, { cause: e })),
          );
          continue;
        }
        throw new SshError(
          this.name,
          "dropped",
          `${this.label}: the server refused a session for "${display}": ${err.message}`,
          { cause: err },
        );
      }
    }
  }

  /** The connection is gone: every waiting command fails now, later ones at once. */
  private lost(reason: string): void {
    if (this.state.kind === "open") this.state = { kind: "dropped", reason };
    for (const f of [...this.inFlight]) f.fail(this.droppedWhile(f.command));
    this.sessions.fail(this.unavailable("a command"));
    for (const f of this.forwards) f.destroy();
    this.forwards.clear();
    if (this.jump && !this.jumpClosed) this.jump.end();
    if (!this.clientClosed) this.client.end();
  }

  private async probeSudo(): Promise<{ uid: number; sudo: SudoMode }> {
    const r = await this.runChannel(
      remoteCommand(["sh", "-c", SUDO_PROBE_SCRIPT]),
      "sudo probe",
      undefined,
      undefined,
    );
    const probe = parseSudoProbe(r.stdout.toString());
    const user = this.endpoint.user;
    if (probe.uid === 0) return { uid: 0, sudo: { kind: "root" } };
    if (probe.passwordless) return { uid: probe.uid, sudo: { kind: "nopasswd" } };
    const needsPassword = /password is required/i.test(probe.detail);
    if (this.sudoPassword === undefined) {
      const reason = needsPassword
        ? `sudo needs a password for user "${user}": allow password-less sudo (NOPASSWD) for this user or give sudoPassword`
        : `user "${user}" cannot use sudo (${probe.detail || "sudo -n true failed"}): allow password-less sudo or give sudoPassword`;
      return { uid: probe.uid, sudo: { kind: "unavailable", reason } };
    }
    const check = await this.runChannel(
      remoteCommand(["sudo", "-S", "-k", "-p", "", "--", "true"]),
      "sudo -S true",
      Buffer.from(`${this.sudoPassword}\n`),
      30_000,
    );
    if (check.code === 0) return { uid: probe.uid, sudo: { kind: "password" } };
    // sudo's own words ("1 incorrect password attempt", "carol is not in the sudoers file"); they
    // never contain the password.
    const said = check.stderr
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !/^Sorry, try again\.?$/.test(l));
    const detail = said.at(-1) ?? `exit code ${check.code}`;
    return {
      uid: probe.uid,
      sudo: {
        kind: "unavailable",
        reason: `sudo refused user "${user}" with the sudoPassword given (${detail})`,
      },
    };
  }

  // ---- files -----------------------------------------------------------------------------

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

  // ---- facts -----------------------------------------------------------------------------

  async hostname(): Promise<string> {
    return (await this.facts()).hostname;
  }

  private knownFacts: Promise<HostFacts> | undefined;

  /**
   * One round trip per connection: a workflow asks in its inventory, its preflight checks and
   * each node's phases, and nothing kubeforge does changes the machine's name, size or user. A
   * failed read is not kept.
   */
  facts(): Promise<HostFacts> {
    if (!this.knownFacts) {
      const asked = this.readFacts();
      asked.catch(() => {
        if (this.knownFacts === asked) this.knownFacts = undefined;
      });
      this.knownFacts = asked;
    }
    return this.knownFacts;
  }

  private async readFacts(): Promise<HostFacts> {
    const r = await this.rawExec(["sh", "-c", FACTS_SCRIPT], {});
    const lines = r.stdout.toString().trim().split("\n");
    const [hostname, machine, kernelRelease, cpus, memKiB, uid] = lines;
    if (r.code !== 0 || lines.length !== 6) {
      throw new Error(
        `${this.label}: cannot read the host's facts: ${r.stderr.trim() || r.stdout.toString().trim()}`,
      );
    }
    return {
      hostname: hostname!,
      arch: nodeArch(machine!),
      kernelRelease: kernelRelease!,
      cpuCount: Number(cpus),
      memoryBytes: Number(memKiB) * 1024,
      uid: Number(uid),
      rootAccess: this.sudoMode.kind !== "unavailable",
    };
  }

  // ---- forwards and lifetime -------------------------------------------------------------

  /** Whether commands and forwards can still use the connection. */
  get isOpen(): boolean {
    return this.state.kind === "open";
  }

  /**
   * One TCP connection to targetHost:targetPort as seen from the host (a direct-tcpip channel);
   * rejects when the host cannot connect (refused, unreachable) or the connection is gone.
   */
  connectTo(
    targetHost: string,
    targetPort: number,
    from: { address: string; port: number } = { address: "127.0.0.1", port: 0 },
  ): Promise<Duplex> {
    return new Promise<Duplex>((resolve, reject) => {
      if (this.state.kind !== "open")
        return reject(this.unavailable(`connection to ${targetHost}:${targetPort}`));
      try {
        this.client.forwardOut(from.address, from.port, targetHost, targetPort, (err, s) =>
          err ? reject(err) : resolve(s),
        );
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  }

  async forward(targetHost: string, targetPort: number): Promise<Forward> {
    if (this.state.kind !== "open")
      throw this.unavailable(`forward to ${targetHost}:${targetPort}`);
    // A dead target fails every retry of the client the same way: said once, not per attempt.
    let said: string | undefined;
    const f = await openLocalForward(
      (from) => this.connectTo(targetHost, targetPort, from),
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

  /** Ends forwards, the connection and the jump connection. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.state.kind === "open") this.state = { kind: "closed" };
      const forwards = [...this.forwards];
      this.forwards.clear();
      await Promise.all(forwards.map((f) => f.close()));
      for (const f of [...this.inFlight]) f.fail(this.droppedWhile(f.command));
      this.sessions.fail(this.unavailable("a command"));
      await endClient(this.client, () => this.clientClosed);
      if (this.jump) await endClient(this.jump, () => this.jumpClosed);
    })();
    return this.closing;
  }
}
