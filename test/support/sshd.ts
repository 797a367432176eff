import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmod, chown, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createNetNamespace, type NetNamespace } from "./netns.js";

// A real OpenSSH sshd (Debian's /usr/sbin/sshd) as a test host: its own network namespace,
// joined to the root namespace by a veth pair on a /30 of 10.252.0.0/16, so the test process
// dials it like a remote machine and faults are real (a blackhole is an iptables DROP inside
// the namespace; a dropped connection is its sshd processes killed). sshd runs in a private
// mount namespace: /run is a fresh tmpfs (sshd's privilege-separation directory) and
// /etc/passwd, /etc/shadow, /etc/group and /etc/sudoers are bind-mounted copies with test
// users added, so the machine's own accounts are never touched.
// Users: root (key), alice (password-less sudo), bob (sudo wants his password), carol (no sudo).

export interface ClientKey {
  /** OpenSSH private key text. */
  privateKey: string;
  passphrase?: string;
  /** "ssh-ed25519 AAAA... comment" */
  publicKey: string;
  /** The private key file (mode 0600). */
  file: string;
}

export interface SshUser {
  name: string;
  uid: number;
  password: string;
  home: string;
}

export interface SshdHostKey {
  /** From ssh-keygen -lf. */
  fingerprint: string;
  /** "<type> <base64>" */
  publicKey: string;
  /** A plain known_hosts line for the address and port tests dial. */
  knownHostsLine: string;
}

export interface SshdOptions {
  maxSessions?: number;
  maxAuthTries?: number;
  /** PasswordAuthentication (default false). */
  passwordAuth?: boolean;
  /** Also run a second sshd with its own host key on 127.0.0.1:2222 inside the namespace. */
  inner?: boolean;
  /** Start sshd now (default true). */
  start?: boolean;
  /** The umask sshd (and so every session) starts with, e.g. "077". */
  umask?: string;
  /** The outer sshd also has an RSA host key (after its ed25519 one). */
  rsaHostKey?: boolean;
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Sshd {
  dir: string;
  ns: string;
  /** The namespace's address, where sshd listens on port 22. */
  address: string;
  port: 22;
  /** The root namespace's end of the veth pair. */
  runnerAddress: string;
  hostKey: SshdHostKey;
  /** The outer sshd's RSA host key (option rsaHostKey). */
  rsaHostKey?: SshdHostKey;
  /** The inner sshd (only reachable from inside the namespace). */
  inner?: SshdHostKey & { host: "127.0.0.1"; port: 2222 };
  keys: { plain: ClientKey; encrypted: ClientKey; stranger: ClientKey };
  users: { alice: SshUser; bob: SshUser; carol: SshUser };
  start(): Promise<void>;
  stop(): Promise<void>;
  /** A new host key for the outer sshd (restarted). */
  replaceHostKey(): Promise<void>;
  /** "Connection from" lines in the outer sshd's log. */
  connectionCount(): Promise<number>;
  log(): Promise<string>;
  /** sudo's own log of the commands it ran (Defaults logfile). */
  sudoLog(): Promise<string>;
  /** Runs argv inside the namespace and private mount namespace (as `user` when given). */
  run(
    argv: string[],
    opts?: { user?: string; stdin?: string; timeoutMs?: number },
  ): Promise<CommandResult>;
  /** A long-running process inside the namespace (ended by close()). */
  spawn(argv: string[]): ChildProcess;
  /** SIGKILLs every process serving a connection (and their commands); the listener stays. */
  dropConnections(): Promise<void>;
  /** Drops every packet to port 22 in the namespace (on) or stops doing so (off). */
  blackhole(on: boolean): Promise<void>;
  close(): Promise<void>;
}

function run(
  argv: string[],
  opts: { stdin?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = execFile(
      argv[0]!,
      argv.slice(1),
      { timeout: opts.timeoutMs ?? 30_000, killSignal: "SIGKILL", env: opts.env ?? process.env },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.on("error", () => {
      /* the command may exit without reading its input */
    });
    child.stdin?.end(opts.stdin ?? "");
  });
}

async function must(argv: string[], opts: { stdin?: string } = {}): Promise<string> {
  const r = await run(argv, opts);
  if (r.code !== 0) throw new Error(`${argv.join(" ")} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

async function keygen(file: string, comment: string, passphrase = ""): Promise<ClientKey> {
  await must(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", comment, "-f", file]);
  return {
    privateKey: await readFile(file, "utf8"),
    ...(passphrase ? { passphrase } : {}),
    publicKey: (await readFile(`${file}.pub`, "utf8")).trim(),
    file,
  };
}

async function hostKey(file: string, name: string, type = "ed25519"): Promise<SshdHostKey> {
  await must(["ssh-keygen", "-q", "-t", type, "-N", "", "-C", "host", "-f", file]);
  const pub = (await readFile(`${file}.pub`, "utf8")).trim().split(" ").slice(0, 2).join(" ");
  const fingerprint = (await must(["ssh-keygen", "-l", "-E", "sha256", "-f", `${file}.pub`])).split(
    " ",
  )[1]!;
  return { fingerprint, publicKey: pub, knownHostsLine: `${name} ${pub}` };
}

/** A /30 of 10.252.0.0/16 claimed by creating the veth named after it (atomic between files). */
async function claimVeth(ns: string): Promise<{ link: string; runner: string; inside: string }> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const a = 1 + Math.floor(Math.random() * 254);
    const b = 4 * Math.floor(Math.random() * 64);
    const routes = await run(["ip", "-4", "route", "show", "match", `10.252.${a}.${b + 1}`]);
    if (routes.stdout.split("\n").some((l) => l.trim() && !l.startsWith("default"))) continue;
    const link = `kfs${a}x${b}`;
    const r = await run([
      "ip",
      "link",
      "add",
      link,
      "type",
      "veth",
      "peer",
      "name",
      "eth0",
      "netns",
      ns,
    ]);
    if (r.code !== 0) {
      if (/exists/i.test(r.stderr)) continue;
      throw new Error(`ip link add ${link}: ${r.stderr.trim()}`);
    }
    return { link, runner: `10.252.${a}.${b + 1}`, inside: `10.252.${a}.${b + 2}` };
  }
  throw new Error("no free 10.252.<a>.<b>/30 for an sshd test host after 40 attempts");
}

/** Unused uids for the test users (they exist only in the namespace's private /etc/passwd). */
async function freeUids(n: number): Promise<number[]> {
  const passwd = await readFile("/etc/passwd", "utf8");
  const used = new Set(passwd.split("\n").map((l) => Number(l.split(":")[2])));
  const out: number[] = [];
  for (let uid = 61_000 + Math.floor(Math.random() * 3000); out.length < n; uid++) {
    if (!used.has(uid)) out.push(uid);
  }
  return out;
}

function descendants(root: number, parents: Map<number, number>): number[] {
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of parents) {
      if (parent === pid) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return out;
}

async function processParents(): Promise<Map<number, number>> {
  const parents = new Map<number, number>();
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // "pid (comm) state ppid ...": comm may contain spaces and parentheses.
    const m = /\) \S+ (\d+)/.exec(stat.slice(stat.lastIndexOf(")")));
    if (m) parents.set(Number(entry), Number(m[1]));
  }
  return parents;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startSshd(opts: SshdOptions = {}): Promise<Sshd> {
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-sshd-"));
  await chmod(dir, 0o755); // sshd reads authorized_keys as the user
  const cleanups: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })];
  let netns: NetNamespace | undefined;
  let holder: ChildProcess | undefined;
  const daemons = new Map<string, ChildProcess>();

  const closeAll = async () => {
    for (const d of daemons.values()) d.kill("SIGKILL");
    if (netns) {
      const pids = await run(["ip", "netns", "pids", netns.name]);
      for (const pid of pids.stdout.split("\n").filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          /* gone */
        }
      }
    }
    holder?.kill("SIGKILL");
    if (netns) {
      const name = netns.name;
      // The namespace is busy until its processes are reaped.
      await waitFor(`namespace ${name} to empty`, async () => {
        const r = await run(["ip", "netns", "pids", name]);
        return r.stdout.trim() === "";
      }).catch(() => {});
      netns.remove();
    }
    for (const c of cleanups.reverse()) await c().catch(() => {});
  };

  try {
    netns = createNetNamespace("kfssh");
    const ns = netns.name;
    const veth = await claimVeth(ns);
    cleanups.push(() => run(["ip", "link", "del", veth.link]));
    await must(["ip", "addr", "add", `${veth.runner}/30`, "dev", veth.link]);
    await must(["ip", "link", "set", veth.link, "up"]);
    await must([...netns.exec, "ip", "addr", "add", `${veth.inside}/30`, "dev", "eth0"]);
    await must([...netns.exec, "ip", "link", "set", "eth0", "up"]);

    // Keys.
    const keyDir = join(dir, "keys");
    await mkdir(keyDir, { mode: 0o700 });
    const outerKeyFile = join(keyDir, "ssh_host_ed25519_key");
    let outerKey = await hostKey(outerKeyFile, veth.inside);
    const rsaKeyFile = join(keyDir, "ssh_host_rsa_key");
    const rsaKey = opts.rsaHostKey ? await hostKey(rsaKeyFile, veth.inside, "rsa") : undefined;
    const innerKeyFile = join(keyDir, "inner_host_ed25519_key");
    const innerKey = opts.inner ? await hostKey(innerKeyFile, "[127.0.0.1]:2222") : undefined;
    const plain = await keygen(join(keyDir, "plain"), "plain");
    const encrypted = await keygen(
      join(keyDir, "encrypted"),
      "encrypted",
      `pass-${randomBytes(6).toString("hex")}`,
    );
    const stranger = await keygen(join(keyDir, "stranger"), "stranger");
    await writeFile(join(dir, "authorized_keys"), `${plain.publicKey}\n${encrypted.publicKey}\n`, {
      mode: 0o644,
    });

    // Users, in copies of the account files.
    const etc = join(dir, "etc");
    await mkdir(etc, { mode: 0o755 });
    const [aliceUid, bobUid, carolUid] = await freeUids(3);
    const users = {} as Sshd["users"];
    let passwd = await readFile("/etc/passwd", "utf8");
    let group = await readFile("/etc/group", "utf8");
    // root's login shell becomes /bin/sh: the machine's own ~/.bashrc (pyenv rehash locks,
    // prompts) must not run in test sessions, nor be killed halfway by the fault tests.
    passwd = passwd
      .split("\n")
      .map((l) => (l.startsWith("root:") ? l.replace(/:[^:]*$/, ":/bin/sh") : l))
      .join("\n");
    let shadow = (await readFile("/etc/shadow", "utf8"))
      .split("\n")
      // A locked root ("!") would refuse even key logins when sshd does not use PAM.
      .map((l) => (l.startsWith("root:!") ? l.replace(/^root:[^:]*/, "root:*") : l))
      .join("\n");
    for (const [name, uid] of [
      ["alice", aliceUid!],
      ["bob", bobUid!],
      ["carol", carolUid!],
    ] as const) {
      const home = join(dir, "home", name);
      await mkdir(home, { recursive: true, mode: 0o755 });
      await chown(home, uid, uid);
      const password = `pw-${randomBytes(8).toString("hex")}`;
      const hash = (await must(["openssl", "passwd", "-6", "-stdin"], { stdin: password })).trim();
      passwd = `${passwd.trimEnd()}\n${name}:x:${uid}:${uid}::${home}:/bin/sh\n`;
      group = `${group.trimEnd()}\n${name}:x:${uid}:\n`;
      shadow = `${shadow.trimEnd()}\n${name}:${hash}:19000:0:99999:7:::\n`;
      users[name] = { name, uid, password, home };
    }
    await writeFile(join(etc, "passwd"), passwd, { mode: 0o644 });
    await writeFile(join(etc, "group"), group, { mode: 0o644 });
    await writeFile(join(etc, "shadow"), shadow, { mode: 0o640 });
    await writeFile(
      join(etc, "sudoers"),
      [
        "Defaults env_reset",
        'Defaults secure_path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"',
        "Defaults lecture=never",
        `Defaults logfile=${dir}/sudo.log`,
        "Defaults loglinelen=0",
        "root ALL=(ALL:ALL) ALL",
        "alice ALL=(ALL:ALL) NOPASSWD: ALL",
        "bob ALL=(ALL:ALL) ALL",
        "",
      ].join("\n"),
      { mode: 0o440 },
    );
    await must(["visudo", "-c", "-q", "-f", join(etc, "sudoers")]);

    // The holder owns the private mount namespace; everything else enters it with nsenter.
    const mounts = [
      "set -e",
      "mount -t tmpfs -o mode=0755 tmpfs /run",
      "mkdir -m 0755 /run/sshd",
      ...["passwd", "group", "shadow", "sudoers"].map((f) => `mount --bind ${etc}/${f} /etc/${f}`),
      "echo ready",
      // Lives as long as the test process holds its stdin open: a test process killed
      // hard does not leave the mount namespace behind.
      "exec cat > /dev/null",
    ].join("\n");
    holder = spawn(
      "ip",
      ["netns", "exec", ns, "unshare", "-m", "--propagation", "private", "sh", "-c", mounts],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    const h = holder;
    await new Promise<void>((resolve, reject) => {
      let err = "";
      h.stderr!.on("data", (b: Buffer) => (err += b.toString()));
      h.stdout!.once("data", () => resolve());
      h.once("exit", (code) =>
        reject(new Error(`namespace holder exited (${code}): ${err.trim()}`)),
      );
    });
    const enter = (user?: string) => [
      "nsenter",
      "-t",
      String(h.pid),
      "-m",
      "-n",
      "--",
      ...(user ? ["setpriv", `--reuid=${user}`, `--regid=${user}`, "--init-groups", "--"] : []),
    ];

    const config = (listen: string, keyFiles: string[], log: string) =>
      [
        `ListenAddress ${listen}`,
        ...keyFiles.map((k) => `HostKey ${k}`),
        "PidFile none",
        `AuthorizedKeysFile ${dir}/authorized_keys`,
        "StrictModes no",
        "UsePAM no",
        "PermitRootLogin prohibit-password",
        `PasswordAuthentication ${opts.passwordAuth ? "yes" : "no"}`,
        "KbdInteractiveAuthentication no",
        `MaxSessions ${opts.maxSessions ?? 10}`,
        `MaxAuthTries ${opts.maxAuthTries ?? 6}`,
        "MaxStartups 100",
        "LogLevel VERBOSE",
        "PrintMotd no",
        "UseDNS no",
        "AllowTcpForwarding yes",
        "Subsystem sftp internal-sftp",
        `# log: ${log}`,
        "",
      ].join("\n");
    const daemonSpecs = [
      {
        id: "outer",
        listen: `${veth.inside}:22`,
        keys: [outerKeyFile, ...(rsaKey ? [rsaKeyFile] : [])],
      },
      ...(opts.inner ? [{ id: "inner", listen: "127.0.0.1:2222", keys: [innerKeyFile] }] : []),
    ];
    for (const d of daemonSpecs) {
      await writeFile(join(dir, `${d.id}.conf`), config(d.listen, d.keys, d.id), { mode: 0o644 });
    }
    const logFile = (id: string) => join(dir, `${id}.log`);

    const startDaemon = async (id: string) => {
      if (daemons.has(id)) return;
      const log = logFile(id);
      const before = (await readFile(log, "utf8").catch(() => "")).length;
      await must([...enter(), "/usr/sbin/sshd", "-t", "-f", join(dir, `${id}.conf`)]);
      // sshd ends when the wrapper's stdin closes: at stop(), or when the test process dies.
      const child = spawn(
        enter()[0]!,
        [
          ...enter().slice(1),
          "sh",
          "-c",
          `umask ${opts.umask ?? "022"} && { /usr/sbin/sshd -D -f "$1" -E "$2" </dev/null & pid=$!; cat > /dev/null; kill $pid; wait $pid; }`,
          "sh",
          join(dir, `${id}.conf`),
          log,
        ],
        { stdio: ["pipe", "ignore", "ignore"] },
      );
      daemons.set(id, child);
      child.once("exit", () => {
        if (daemons.get(id) === child) daemons.delete(id);
      });
      const logged = async () => (await readFile(log, "utf8").catch(() => "")).slice(before);
      await waitFor(`sshd (${id}) to listen`, async () => {
        if (!daemons.has(id)) throw new Error(`sshd (${id}) exited: ${(await logged()).trim()}`);
        return (await logged()).includes("Server listening on");
      }).catch(async (e: Error) => {
        throw new Error(`${e.message}; its log: ${(await logged()).trim()}`);
      });
    };
    const stopDaemon = async (id: string) => {
      const child = daemons.get(id);
      if (!child) return;
      daemons.delete(id);
      const exited = new Promise((r) => child.once("exit", r));
      child.stdin!.end();
      await exited;
    };

    const fixture: Sshd = {
      dir,
      ns,
      address: veth.inside,
      port: 22,
      runnerAddress: veth.runner,
      get hostKey() {
        return outerKey;
      },
      ...(rsaKey ? { rsaHostKey: rsaKey } : {}),
      ...(innerKey
        ? { inner: { ...innerKey, host: "127.0.0.1" as const, port: 2222 as const } }
        : {}),
      keys: { plain, encrypted, stranger },
      users,
      async start() {
        for (const d of daemonSpecs) await startDaemon(d.id);
      },
      async stop() {
        for (const d of daemonSpecs) await stopDaemon(d.id);
      },
      async replaceHostKey() {
        await stopDaemon("outer");
        await rm(outerKeyFile, { force: true });
        await rm(`${outerKeyFile}.pub`, { force: true });
        outerKey = await hostKey(outerKeyFile, veth.inside);
        await startDaemon("outer");
      },
      async connectionCount() {
        const text = await readFile(logFile("outer"), "utf8").catch(() => "");
        return text.split("\n").filter((l) => l.includes("Connection from")).length;
      },
      log: () => readFile(logFile("outer"), "utf8").catch(() => ""),
      sudoLog: () => readFile(join(dir, "sudo.log"), "utf8").catch(() => ""),
      run(argv, o = {}) {
        const prefix = enter(o.user);
        const env = o.user
          ? {
              PATH: "/usr/local/bin:/usr/bin:/bin",
              HOME: users[o.user as keyof Sshd["users"]]?.home ?? "/",
            }
          : process.env;
        return run([...prefix, ...argv], {
          env,
          ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
          ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
        });
      },
      spawn(argv) {
        const prefix = enter();
        return spawn(prefix[0]!, [...prefix.slice(1), ...argv], {
          stdio: ["ignore", "pipe", "pipe"],
        });
      },
      async dropConnections() {
        const parents = await processParents();
        // Below each wrapper: the listening sshd, and below it one process tree per connection.
        const listeners = [...daemons.values()].flatMap((d) =>
          [...parents].filter(([, parent]) => parent === d.pid).map(([pid]) => pid),
        );
        const victims = listeners.flatMap((l) => descendants(l, parents));
        for (const pid of victims) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            /* gone */
          }
        }
      },
      async blackhole(on) {
        await must([
          ...enter(),
          "iptables",
          on ? "-I" : "-D",
          "INPUT",
          "-p",
          "tcp",
          "--dport",
          "22",
          "-j",
          "DROP",
        ]);
      },
      close: closeAll,
    };
    if (opts.start ?? true) await fixture.start();
    return fixture;
  } catch (e) {
    await closeAll();
    throw e;
  }
}
