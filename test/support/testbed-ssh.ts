import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { CliResult } from "./cli.js";
import { alive } from "./processes.js";

// The SSH side of the testbed (testbed.ts, `createTestbed(names, { ssh: true })`): every host runs
// the machine's OpenSSH sshd inside its network namespace and in a private mount + UTS namespace
// of its own, so an SSH session sees a host, not the machine:
//  - `hostname` prints the host's name (UTS namespace);
//  - the node folders kubeforge writes (/etc/kubernetes, /var/lib/kubelet, ...) are bind mounts
//    of the host's rootfs folders, which the simulated kubelet reads;
//  - /usr/local/sbin is the simulated node's bin folder (the `systemctl` shim and its siblings),
//    first on root's PATH in an sshd session (Debian's superuser path) and on sudo's secure_path;
//  - /etc, /var/lib, /opt and /usr/local/bin are overlays whose writable layer is a tmpfs of the
//    host's (binaries node preparation installs stay on the host): the
//    node folders missing on the machine (/etc/kubernetes...) are created in that layer, not on
//    the machine, and whatever else a session writes there (sysctl.d, a sudoers.d file) stays on
//    the host and vanishes with it. A bind mount needs an existing mount point; creating missing
//    ones on the machine would leave folders behind after a crash and would race between test
//    files (removing a mount point detaches it in every namespace that uses it).
//  - /run, /home, /root and /etc/sudoers.d are empty tmpfs of the host's (sshd's privilege
//    separation folder, sudo's state, the users' homes; root's has none of the machine's
//    dotfiles, so a session's PATH is sshd's own: /usr/local/sbin first; the machine's sudo
//    drop-ins do not apply, and a test may add one to a single host);
//  - /etc/passwd, /etc/shadow, /etc/group, /etc/sudoers are the machine's plus two test users,
//    written into the host's /etc layer: `kf` (password-less sudo) and `kfpw` (sudo asks for the
//    password). The machine's own accounts and /root/.ssh are never touched: sshd reads the
//    testbed's authorized_keys file (AuthorizedKeysFile) for every user.
// One long-lived process per host (`sleep infinity`, the "holder") owns those namespaces, so the
// host keeps its mounts and files while sshd is stopped and started again (fault tests).
// /tmp stays the machine's: the rootfs, the simulated kubelet and the bundled CLI live there.

/** The folders of a node bound from its rootfs into the SSH view (each under an overlaid parent). */
export const SSH_NODE_DIRS = [
  "/etc/kubernetes",
  "/var/lib/kubelet",
  "/var/lib/etcd",
  "/etc/cni",
  "/opt/cni",
  "/var/lib/kubeforge",
  "/etc/kubeforge",
  "/etc/systemd/system",
] as const;

/**
 * Machine folders a host sees through an overlay with a writable layer of its own. /usr/local/bin
 * is where node preparation installs kubelet, kubectl and crictl: without its overlay an SSH
 * session would write into the machine's own folder. /usr/local/sbin is not overlaid: the
 * simulated node's bin folder is bound over it after the overlays (HOLDER_SCRIPT), so its
 * systemctl and crictl stay first on PATH, ahead of an installed /usr/local/bin/crictl.
 */
const OVERLAID = ["/etc", "/var/lib", "/opt", "/usr/local/bin"] as const;

/** Folders that are a fresh tmpfs on every host. */
const PRIVATE_TMPFS = ["/run", "/home", "/root", "/etc/sudoers.d"] as const;

/** The test users (see the file comment). */
export const SUDO_USER = "kf";
export const PASSWORD_SUDO_USER = "kfpw";

/** Debian's sudoers secure_path: /usr/local/sbin (the simulated node's shims) first. */
const SECURE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

for (const d of SSH_NODE_DIRS) {
  if (!OVERLAID.some((p) => d.startsWith(`${p}/`)))
    throw new Error(`testbed-ssh: ${d} is not under an overlaid folder`);
}

/** How to reach a host's sshd. */
export interface TestHostSsh {
  /** The host's address on the testbed bridge (reachable from the test process). */
  host: string;
  port: number;
  user: "root";
  /** The testbed's ed25519 client key (OpenSSH format, mode 0600), accepted for every user. */
  privateKeyFile: string;
  privateKey: string;
  /** "SHA256:..." of the host's ed25519 host key, as `ssh-keygen -lf` prints it. */
  hostKeyFingerprint: string;
  /** "<address> ssh-ed25519 AAAA..." for a known_hosts file. */
  knownHostsLine: string;
  /** A user with password-less sudo (`kf ALL=(ALL) NOPASSWD:ALL`), key or password login. */
  sudoUser: typeof SUDO_USER;
  /** A user whose sudo asks for `password` (`kfpw ALL=(ALL:ALL) ALL`), key or password login. */
  passwordSudoUser: typeof PASSWORD_SUDO_USER;
  /** The login (and sudo) password of both test users; root logs in with the key only. */
  password: string;
}

/** Files shared by the hosts of one testbed: the client key and the account databases. */
export interface SshTestbedFiles {
  dir: string;
  privateKeyFile: string;
  privateKey: string;
  authorizedKeysFile: string;
  accountsDir: string;
  password: string;
  /** Every host's known_hosts line (written by writeKnownHosts). */
  knownHostsFile: string;
}

/** A running host's sshd and the namespaces holding its view of the machine. */
export interface SshHostHandle {
  ssh: TestHostSsh;
  logFile: string;
  /** The process owning the host's mount and UTS namespaces. */
  holderPid: number;
  sshdPid: () => Promise<number | undefined>;
  stopSsh: () => Promise<void>;
  startSsh: () => Promise<void>;
  dropSshSessions: () => Promise<number>;
}

function runCommand(
  argv: string[],
  opts: { stdin?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      argv[0]!,
      argv.slice(1),
      {
        maxBuffer: 32 * 1024 * 1024,
        timeout: opts.timeoutMs ?? 30_000,
        killSignal: "SIGKILL",
        env: opts.env ?? process.env,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        const note = error?.killed ? `\n(killed after ${opts.timeoutMs ?? 30_000} ms)` : "";
        resolve({ code, stdout, stderr: stderr + note });
      },
    );
    child.stdin?.on("error", () => {
      /* the command may exit without reading its input */
    });
    child.stdin?.end(opts.stdin ?? "");
  });
}

async function must(argv: string[], stdin?: string): Promise<string> {
  const r = await runCommand(argv, stdin === undefined ? {} : { stdin });
  if (r.code !== 0) throw new Error(`${argv.join(" ")} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Numbers used neither as a uid in passwd nor as a gid in group, from 2000 up. */
function freeIds(passwd: string, group: string, count: number): number[] {
  const used = new Set<number>();
  for (const line of passwd.split("\n")) used.add(Number(line.split(":")[2]));
  for (const line of group.split("\n")) used.add(Number(line.split(":")[2]));
  const ids: number[] = [];
  for (let n = 2000; ids.length < count; n++) if (!used.has(n)) ids.push(n);
  return ids;
}

/** A database's lines without the test users (a machine could have a user of the same name). */
function withoutTestUsers(text: string): string[] {
  const names = new Set([SUDO_USER, PASSWORD_SUDO_USER]);
  return text.split("\n").filter((l) => l.trim() !== "" && !names.has(l.split(":")[0]!));
}

/** An ed25519 key pair without passphrase (ssh-keygen writes the private key 0600). */
function generateKey(path: string, comment: string): Promise<string> {
  return must(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path]);
}

/**
 * Creates the testbed's client key, authorized_keys and account databases in `<base>/ssh`.
 * The folders on the way must be traversable by the test users: sshd opens AuthorizedKeysFile
 * with the user's identity.
 */
export async function prepareSshTestbed(base: string): Promise<SshTestbedFiles> {
  const dir = join(base, "ssh");
  const accountsDir = join(dir, "accounts");
  await chmod(base, 0o711);
  await mkdir(accountsDir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  const privateKeyFile = join(dir, "id_ed25519");
  await generateKey(privateKeyFile, "kubeforge-testbed");
  await chmod(privateKeyFile, 0o600);
  const authorizedKeysFile = join(dir, "authorized_keys");
  await writeFile(authorizedKeysFile, await readFile(`${privateKeyFile}.pub`, "utf8"), {
    mode: 0o644,
  });

  const password = randomBytes(12).toString("hex");
  const hash = (await must(["openssl", "passwd", "-6", "-stdin"], `${password}\n`)).trim();
  const passwd = await readFile("/etc/passwd", "utf8");
  const group = await readFile("/etc/group", "utf8");
  const shadow = await readFile("/etc/shadow", "utf8");
  const [kfId, kfpwId] = freeIds(passwd, group, 2) as [number, number];
  const shell = existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";
  const today = Math.floor(Date.now() / 86_400_000);
  const users = [
    [SUDO_USER, kfId, "kubeforge testbed, password-less sudo"],
    [PASSWORD_SUDO_USER, kfpwId, "kubeforge testbed, sudo with a password"],
  ] as const;
  const files: Record<string, string[]> = {
    passwd: [
      ...withoutTestUsers(passwd),
      ...users.map(([u, id, gecos]) => `${u}:x:${id}:${id}:${gecos}:/home/${u}:${shell}`),
    ],
    group: [...withoutTestUsers(group), ...users.map(([u, id]) => `${u}:x:${id}:`)],
    // With UsePAM no, sshd refuses every login of an account whose password field starts with
    // "!" (locked), key logins included: root's field becomes "*" (no password, not locked).
    shadow: [
      ...withoutTestUsers(shadow).map((l) => l.replace(/^root:![^:]*:/, "root:*:")),
      ...users.map(([u]) => `${u}:${hash}:${today}:0:99999:7:::`),
    ],
    sudoers: [
      "# kubeforge testbed host (the machine's /etc/sudoers is not used)",
      "Defaults\tenv_reset",
      `Defaults\tsecure_path="${SECURE_PATH}"`,
      "Defaults\tlecture=never",
      "root\tALL=(ALL:ALL) ALL",
      `${SUDO_USER}\tALL=(ALL) NOPASSWD:ALL`,
      `${PASSWORD_SUDO_USER}\tALL=(ALL:ALL) ALL`,
      // Empty on every host (a tmpfs): a test may change one host's rules by adding a file.
      "@includedir /etc/sudoers.d",
    ],
  };
  if (existsSync("/etc/gshadow")) {
    const gshadow = await readFile("/etc/gshadow", "utf8");
    files.gshadow = [...withoutTestUsers(gshadow), ...users.map(([u]) => `${u}:!::`)];
  }
  for (const [name, lines] of Object.entries(files)) {
    await writeFile(join(accountsDir, name), `${lines.join("\n")}\n`, { mode: 0o600 });
  }
  const privateKey = await readFile(privateKeyFile, "utf8");
  return {
    dir,
    privateKeyFile,
    privateKey,
    authorizedKeysFile,
    accountsDir,
    password,
    knownHostsFile: join(dir, "known_hosts"),
  };
}

export async function writeKnownHosts(files: SshTestbedFiles, lines: string[]): Promise<void> {
  await writeFile(files.knownHostsFile, `${lines.join("\n")}\n`, { mode: 0o644 });
}

/**
 * sh script run by the holder (argv: name overlayDir accountsDir hostsFile resolvFile rootfs
 * binDir, then the node folders). It builds the host's view of the machine, prints "ready" and
 * becomes `sleep infinity`, which keeps the namespaces alive.
 */
const HOLDER_SCRIPT = `set -eu
name=$1 layers=$2 accounts=$3 hosts=$4 resolv=$5 rootfs=$6 bin=$7
shift 7
hostname "$name"
mount -t tmpfs -o mode=0700 kubeforge-testbed "$layers"
for d in ${OVERLAID.join(" ")}; do
  [ -d "$d" ] || { echo "$d is not a folder on this machine" >&2; exit 1; }
  layer="$layers/$(printf %s "$d" | tr / _)"
  mkdir "$layer" "$layer/upper" "$layer/work"
  mount -t overlay kubeforge-testbed -o "lowerdir=$d,upperdir=$layer/upper,workdir=$layer/work" "$d"
done
for d in ${PRIVATE_TMPFS.join(" ")}; do
  mkdir -p "$d"
  mount -t tmpfs -o mode=0755 kubeforge-testbed "$d"
done
chmod 0700 /root
mkdir -m 0755 /run/sshd
# cat into the existing files keeps their owner and mode (shadow: root:shadow 0640).
for f in passwd group shadow gshadow sudoers; do
  if [ -f "$accounts/$f" ]; then cat "$accounts/$f" > "/etc/$f"; fi
done
chmod 0440 /etc/sudoers
for u in ${SUDO_USER} ${PASSWORD_SUDO_USER}; do
  mkdir -m 0700 "/home/$u"
  chown "$u:$u" "/home/$u"
done
printf '%s\\n' "$name" > /etc/hostname
# Replaced rather than bound: on many machines /etc/resolv.conf is a symlink into /run.
rm -f /etc/hosts /etc/resolv.conf
cat "$hosts" > /etc/hosts
cat "$resolv" > /etc/resolv.conf
for d in "$@"; do
  mkdir -p "$d"
  mount --bind "$rootfs$d" "$d"
done
mount --bind "$bin" /usr/local/sbin
echo ready
exec sleep infinity </dev/null >/dev/null 2>&1
`;

function sshdConfig(o: {
  name: string;
  address: string;
  hostKey: string;
  pidFile: string;
  authorizedKeysFile: string;
}): string {
  const sftp = existsSync("/usr/lib/openssh/sftp-server")
    ? "/usr/lib/openssh/sftp-server"
    : "internal-sftp";
  return [
    `# kubeforge testbed host ${o.name}`,
    `ListenAddress ${o.address}:22`,
    `HostKey ${o.hostKey}`,
    `PidFile ${o.pidFile}`,
    // Outside the users' homes: the machine's /root/.ssh is never read or written.
    `AuthorizedKeysFile ${o.authorizedKeysFile}`,
    "StrictModes no",
    "UsePAM no",
    "UseDNS no",
    "PermitRootLogin prohibit-password",
    "PubkeyAuthentication yes",
    "PasswordAuthentication yes",
    "KbdInteractiveAuthentication no",
    "MaxSessions 10",
    "AllowTcpForwarding yes",
    "X11Forwarding no",
    "PrintMotd no",
    "PrintLastLog no",
    "LogLevel VERBOSE",
    `Subsystem sftp ${sftp}`,
    "",
  ].join("\n");
}

/** Waits for the holder's "ready" line; its stderr makes the error when the setup fails. */
function spawnHolder(argv: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the namespace setup of a testbed host took over 20 s: ${err.trim()}`));
    }, 20_000);
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
      if (out.includes("ready\n")) {
        clearTimeout(timer);
        child.unref();
        resolve(child.pid!);
      }
    });
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (!out.includes("ready\n"))
        reject(new Error(`the namespace setup of a testbed host failed (${code}): ${err.trim()}`));
    });
  });
}

async function readPid(file: string): Promise<number | undefined> {
  const n = Number((await readFile(file, "utf8").catch(() => "")).trim());
  return Number.isInteger(n) && n > 0 && alive(n) ? n : undefined;
}

async function commOf(pid: number): Promise<string> {
  return (await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "")).trim();
}

export interface StartSshHostOptions {
  name: string;
  address: string;
  /** The host's network namespace. */
  ns: string;
  /** A folder of the host's, outside its rootfs. */
  hostDir: string;
  rootfs: string;
  /** The simulated node's bin folder, seen as /usr/local/sbin. */
  binDir: string;
  hostsFile: string;
  resolvFile: string;
  files: SshTestbedFiles;
  /** Pids of the processes in the host's network namespace. */
  netnsPids(): number[];
}

/** Builds the host's namespaces and starts its sshd; stopping is the testbed's (kill the netns). */
export async function startSshHost(o: StartSshHostOptions): Promise<SshHostHandle> {
  const dir = join(o.hostDir, "ssh");
  const layers = join(o.hostDir, "layers");
  await mkdir(dir, { recursive: true });
  await mkdir(layers, { recursive: true });
  // The rootfs side of each node folder, with the mode a real node has (etcd's data 0700).
  for (const d of SSH_NODE_DIRS) {
    await mkdir(join(o.rootfs, d), {
      recursive: true,
      mode: d === "/var/lib/etcd" ? 0o700 : 0o755,
    });
  }
  const hostKey = join(dir, "ssh_host_ed25519_key");
  await generateKey(hostKey, `root@${o.name}`);
  const [type, key] = (await readFile(`${hostKey}.pub`, "utf8")).trim().split(/\s+/);
  const fingerprint = (await must(["ssh-keygen", "-l", "-f", `${hostKey}.pub`])).match(
    /SHA256:[A-Za-z0-9+/]+/,
  )?.[0];
  if (!fingerprint) throw new Error(`ssh-keygen printed no SHA256 fingerprint for ${hostKey}`);
  const pidFile = join(dir, "sshd.pid");
  const logFile = join(dir, "sshd.log");
  const config = join(dir, "sshd_config");
  await writeFile(
    config,
    sshdConfig({
      name: o.name,
      address: o.address,
      hostKey,
      pidFile,
      authorizedKeysFile: o.files.authorizedKeysFile,
    }),
  );

  const holderPid = await spawnHolder([
    "ip",
    "netns",
    "exec",
    o.ns,
    "unshare",
    "--mount",
    "--uts",
    "--propagation",
    "private",
    "sh",
    "-c",
    HOLDER_SCRIPT,
    "sh",
    o.name,
    layers,
    o.files.accountsDir,
    o.hostsFile,
    o.resolvFile,
    o.rootfs,
    o.binDir,
    ...SSH_NODE_DIRS,
  ]);

  const sshdPid = () => readPid(pidFile);
  const logTail = async () =>
    (await readFile(logFile, "utf8").catch(() => "")).trim().split("\n").slice(-10).join("\n");
  const startSsh = async () => {
    if (await sshdPid()) return;
    if (!alive(holderPid)) throw new Error(`testbed host ${o.name}: its namespaces are gone`);
    await rm(pidFile, { force: true });
    // In the foreground (-D) and a child of this process, which reaps it when it ends (a daemon
    // would be reparented to pid 1, which on some machines leaves zombies for seconds). sshd
    // writes PidFile after binding its socket: the pid file is the readiness signal.
    const child = spawn(
      "nsenter",
      [
        "-t",
        String(holderPid),
        "--mount",
        "--uts",
        "--net",
        "/usr/sbin/sshd",
        "-D",
        "-f",
        config,
        "-E",
        logFile,
      ],
      { detached: true, stdio: "ignore" },
    );
    child.unref();
    let exited: string | undefined;
    child.on("exit", (code, signal) => (exited = `exit ${code ?? signal}`));
    child.on("error", (e) => (exited = e.message));
    const end = Date.now() + 10_000;
    while (!(await sshdPid())) {
      if (exited !== undefined || Date.now() > end) {
        const why = exited ?? "no pid file after 10 s";
        throw new Error(
          `sshd of testbed host ${o.name} did not start (${why}):\n${await logTail()}`,
        );
      }
      await sleep(10);
    }
  };
  const stopSsh = async () => {
    const pid = await sshdPid();
    if (!pid) return;
    process.kill(pid, "SIGTERM");
    const end = Date.now() + 5_000;
    while (alive(pid) && Date.now() < end) await sleep(10);
    if (alive(pid)) process.kill(pid, "SIGKILL");
    await rm(pidFile, { force: true });
  };
  // The per-connection sshd processes: every "sshd" of the namespace but the listener. Killing
  // them closes their TCP connections; the listener keeps accepting new ones.
  const dropSshSessions = async () => {
    const listener = await sshdPid();
    let dropped = 0;
    for (const pid of o.netnsPids()) {
      if (pid === listener || (await commOf(pid)) !== "sshd") continue;
      try {
        process.kill(pid, "SIGKILL");
        dropped++;
      } catch {
        /* gone */
      }
    }
    return dropped;
  };

  await startSsh();
  return {
    ssh: {
      host: o.address,
      port: 22,
      user: "root",
      privateKeyFile: o.files.privateKeyFile,
      privateKey: o.files.privateKey,
      hostKeyFingerprint: fingerprint,
      knownHostsLine: `${o.address} ${type} ${key}`,
      sudoUser: SUDO_USER,
      passwordSudoUser: PASSWORD_SUDO_USER,
      password: o.files.password,
    },
    logFile,
    holderPid,
    sshdPid,
    stopSsh,
    startSsh,
    dropSshSessions,
  };
}

/** The OpenSSH client's argv for `ssh <user>@<host> <command>` with the testbed's key and pins. */
export function sshClientArgv(
  ssh: TestHostSsh,
  knownHostsFile: string,
  user: string,
  command: string,
): string[] {
  return [
    "ssh",
    "-F",
    "/dev/null",
    "-i",
    ssh.privateKeyFile,
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    "BatchMode=yes",
    "-o",
    `UserKnownHostsFile=${knownHostsFile}`,
    "-o",
    "GlobalKnownHostsFile=/dev/null",
    "-o",
    "StrictHostKeyChecking=yes",
    "-o",
    "ConnectTimeout=10",
    "-o",
    "LogLevel=ERROR",
    "-p",
    String(ssh.port),
    `${user}@${ssh.host}`,
    "--",
    command,
  ];
}

export function runSsh(
  argv: string[],
  opts: { stdin?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return runCommand(argv, {
    timeoutMs: opts.timeoutMs ?? 60_000,
    ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
  });
}
