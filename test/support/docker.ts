import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, existsSync, openSync } from "node:fs";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { NODE_PACKAGES } from "../../src/config/docker/node-image.js";
import { DockerEngine } from "../../src/remote/docker/engine.js";
import { containerExec } from "../../src/remote/docker/exec.js";
import { TEST_TIME_SCALE } from "./sim/kubelet/timing.js";
import { ensureNodeImage } from "../../src/remote/docker/image.js";
import { bundleSimCrictl, bundleSimKubelet } from "./sim/kubelet/bundle.js";
import { withFileLock } from "./file-lock.js";

// A Docker engine for the tests, and the node images they run, all made on this machine with no
// registry. dockerd (Debian's docker.io) is started once, on a socket and data root of the
// tests' own, and left running for the next test file (its image cache is the point):
//   --iptables=false --ip6tables=false: Docker's iptables management sets the FORWARD policy to
//     DROP; with br_netfilter loaded, frames bridged between the SSH testbed's namespaces pass
//     FORWARD and would be dropped, breaking the testbed tests that run beside these. Without it
//     node containers still talk on their bridge (an L2 switch; FORWARD's policy stays ACCEPT),
//     and published ports go through docker-proxy; only NAT to the outside is lost, which the
//     nodes do not need (the base image has every package; builds use the host's network).
//   --bridge=none: no default docker0; kubeforge makes a network per cluster.
// The base image is Debian bookworm made by mmdebstrap (Debian's debootstrap successor: apt
// downloads in parallel, where debootstrap fetches one package after the other — 13 minutes
// against 7.5 for the same packages here) with every package of kubeforge's node recipe, then
// `docker import`ed; kubeforge's recipe then finds nothing to install.

const execFileAsync = promisify(execFile);

const DIR = "/run/kubeforge-test-docker";
export const TEST_DOCKER_HOST = `unix://${DIR}/docker.sock`;
const DATA_ROOT = "/var/lib/kubeforge-test-docker";
// A base image build (mmdebstrap) can take 13 minutes on a slow mirror.
const LOCK_WAIT_MS = 40 * 60_000;

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` holding a lock shared by every test process of this machine. */
function withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  return withFileLock(join("/var/tmp", `kubeforge-test-${name}.flock`), fn, LOCK_WAIT_MS);
}

async function answers(): Promise<boolean> {
  const engine = await DockerEngine.connect();
  return engine.version().then(
    () => true,
    () => false,
  );
}

/**
 * The tests' engine, started when it does not answer; sets DOCKER_HOST in this process (for
 * in-process kubeforge code) and returns the environment for a kubeforge subprocess.
 */
export async function testDockerEngine(): Promise<{
  engine: DockerEngine;
  env: Record<string, string>;
}> {
  process.env.DOCKER_HOST = TEST_DOCKER_HOST;
  if (!(await answers())) {
    await withLock("dockerd", async () => {
      if (await answers()) return;
      // Its own temporary folder: it outlives this test run, whose TMPDIR the run removes at
      // its end (runc writes each exec's process file there).
      await mkdir(join(DIR, "tmp"), { recursive: true });
      const log = openSync(join(DIR, "dockerd.log"), "a");
      const child = spawn(
        "dockerd",
        [
          "--host",
          TEST_DOCKER_HOST,
          "--data-root",
          DATA_ROOT,
          "--exec-root",
          join(DIR, "exec"),
          "--pidfile",
          join(DIR, "dockerd.pid"),
          "--iptables=false",
          "--ip6tables=false",
          "--bridge=none",
          // Nodes talk on their bridge and published ports go through docker-proxy: nothing is
          // routed, so the machine's net.ipv4.ip_forward is left as it is.
          "--ip-forward=false",
          "--log-level=warn",
        ],
        {
          detached: true,
          stdio: ["ignore", log, log],
          env: { ...process.env, TMPDIR: join(DIR, "tmp") },
        },
      );
      child.unref();
      const end = Date.now() + 60_000;
      while (!(await answers())) {
        if (Date.now() > end) {
          const said = await readFile(join(DIR, "dockerd.log"), "utf8").catch(() => "");
          throw new Error(
            `dockerd did not answer on ${TEST_DOCKER_HOST} within 60 s:\n${said.slice(-2000)}`,
          );
        }
        await delay(250);
      }
    });
  }
  return { engine: await DockerEngine.connect(), env: { DOCKER_HOST: TEST_DOCKER_HOST } };
}

async function docker(args: string[], timeoutMs = 10 * 60_000): Promise<string> {
  const { stdout } = await execFileAsync("/usr/bin/docker", ["-H", TEST_DOCKER_HOST, ...args], {
    timeout: timeoutMs,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

const BASE_SUITE = "bookworm";
const MIRROR = "http://deb.debian.org/debian";

/**
 * Debian bookworm with kubeforge's node packages, made by mmdebstrap and imported (once per
 * machine: kept in the tests' engine). Returns its reference; logs how long a build took.
 */
export async function testBaseImage(engine: DockerEngine): Promise<string> {
  const key = createHash("sha256")
    .update(JSON.stringify({ BASE_SUITE, MIRROR, NODE_PACKAGES }))
    .digest("hex")
    .slice(0, 12);
  const ref = `kubeforge-test/debian:${BASE_SUITE}-${key}`;
  if (await engine.inspectImage(ref)) return ref;
  return withLock("base-image", async () => {
    if (await engine.inspectImage(ref)) return ref;
    const tar = join("/var/tmp", `kubeforge-test-base-${key}.tar`);
    const started = Date.now();
    await execFileAsync(
      "mmdebstrap",
      [
        "--variant=minbase",
        "--mode=root",
        "--format=tar",
        "--dpkgopt=force-unsafe-io",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        `--include=${NODE_PACKAGES.join(",")}`,
        BASE_SUITE,
        tar,
        MIRROR,
      ],
      { timeout: 40 * 60_000, maxBuffer: 64 * 1024 * 1024 },
    );
    const built = Date.now();
    await docker(["import", tar, ref]);
    await rm(tar, { force: true });
    console.info(
      `test base image ${ref}: mmdebstrap ${Math.round((built - started) / 1000)} s, docker import ${Math.round((Date.now() - built) / 1000)} s`,
    );
    return ref;
  });
}

/** Where the simulation's files live in a node image of the tests. */
export const SIM_DIR = "/opt/kubeforge-sim";

/** POSIX single-quoting. */
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * kubeforge's node image (built by kubeforge's own recipe from the base), plus the simulation:
 * this Node, the simulated kubelet and crictl bundles, and Debian's etcd, which the simulated
 * kubelet runs for etcd.yaml (and etcdctl, for the tests' checks). crictl is a shim in /usr/local/sbin, ahead on the PATH of the
 * /usr/local/bin/crictl node preparation installs (the release server's stand-in binary).
 */
export async function testNodeImage(
  engine: DockerEngine,
  log: (line: string) => void = () => {},
): Promise<{ ref: string; nodeImage: string }> {
  const nodeImage = await withLock("node-image", async () =>
    ensureNodeImage(engine, await testBaseImage(engine), log),
  );
  const files = {
    node: process.execPath,
    "sim-kubelet.mjs": await bundleSimKubelet(),
    "sim-crictl.mjs": await bundleSimCrictl(),
    etcd: "/usr/bin/etcd",
    etcdctl: "/usr/bin/etcdctl",
  };
  const hash = createHash("sha256")
    .update(nodeImage)
    .update(simKubeletLauncher())
    .update(SIM_KUBELET_DROP_IN);
  for (const [name, path] of Object.entries(files)) {
    const s = await stat(path);
    hash.update(`${name} ${path} ${s.size} ${s.mtimeMs}\n`);
  }
  const tag = hash.digest("hex").slice(0, 12);
  const ref = `kubeforge-test/node-sim:${tag}`;
  if (await engine.inspectImage(ref)) return { ref, nodeImage };
  return withLock("sim-image", async () => {
    if (await engine.inspectImage(ref)) return { ref, nodeImage };
    const id = await engine.createContainer(`kubeforge-test-sim-build-${process.pid}`, {
      Image: nodeImage,
      Entrypoint: ["sleep", "infinity"],
      Cmd: [],
    });
    try {
      await engine.startContainer(id);
      const put = async (path: string, from: string, mode: string) => {
        const r = await containerExec(
          engine,
          id,
          "sim image",
          [
            "sh",
            "-c",
            `mkdir -p "$(dirname "$1")" && cat > "$1" && chmod ${mode} "$1"`,
            "sh",
            path,
          ],
          {
            stdin: createReadStream(from),
            timeoutMs: 5 * 60_000,
          },
        );
        if (r.code !== 0)
          throw new Error(`putting ${from} at ${path} in the sim image: ${r.stderr}`);
      };
      await put(`${SIM_DIR}/node`, files.node, "0755");
      await put(`${SIM_DIR}/sim-kubelet.mjs`, files["sim-kubelet.mjs"], "0644");
      await put(`${SIM_DIR}/sim-crictl.mjs`, files["sim-crictl.mjs"], "0644");
      await put("/usr/local/sbin/etcd", files.etcd, "0755");
      await put("/usr/local/sbin/etcdctl", files.etcdctl, "0755");
      const crictl = join(tmpdir(), `kubeforge-sim-crictl-${process.pid}`);
      await writeFile(
        crictl,
        [
          "#!/bin/sh",
          "# SIMULATION (test double): crictl of a kubeforge test node container. Not cri-tools.",
          `exec ${[
            `${SIM_DIR}/node`,
            `${SIM_DIR}/sim-crictl.mjs`,
            "--sim-kubelet-script",
            `${SIM_DIR}/sim-kubelet.mjs`,
            "--sim-runtime-dir",
            "/run/kubeforge-sim",
            "--sim-rootfs",
            "/",
            "--sim-time-scale",
            String(TEST_TIME_SCALE),
          ]
            .map(q)
            .join(" ")} "$@"`,
          "",
        ].join("\n"),
      );
      await put("/usr/local/sbin/crictl", crictl, "0755");
      await writeFile(crictl, simKubeletLauncher());
      await put(`${SIM_DIR}/kubelet`, crictl, "0755");
      await writeFile(crictl, SIM_KUBELET_DROP_IN);
      await put(
        "/etc/systemd/system/kubelet.service.d/20-kubeforge-simulation.conf",
        crictl,
        "0644",
      );
      await rm(crictl, { force: true });
      await engine.stopContainer(id, 1);
      await engine.commit(id, "kubeforge-test/node-sim", tag, {
        Cmd: ["/sbin/init"],
        StopSignal: "SIGRTMIN+3",
        Env: [
          "container=docker",
          "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        ],
      });
    } finally {
      await engine.removeContainer(id);
    }
    return { ref, nodeImage };
  });
}

/**
 * The simulated kubelet's launcher, which kubelet.service runs in a test node: it starts the
 * simulated kubelet (its log goes to the journal). The flags of kubeadm's drop-in arrive and
 * are ignored: the simulation reads the same files itself.
 */
export function simKubeletLauncher(version = "v1.35.0"): string {
  return [
    "#!/bin/sh",
    "# SIMULATION (test double): starts the simulated kubelet. Not a kubelet.",
    `exec ${SIM_DIR}/node ${SIM_DIR}/sim-kubelet.mjs --rootfs=/ --node-name "$(uname -n)" --runtime-dir /run/kubeforge-sim --time-scale ${TEST_TIME_SCALE} --kubelet-version ${version}`,
    "",
  ].join("\n");
}

/**
 * A drop-in after kubeadm's 10-kubeadm.conf (systemd applies drop-ins in name order, and an
 * empty ExecStart= clears the earlier one, systemd.unit(5)): the unit and drop-in node
 * preparation writes stay as they are, systemd reads kubeadm's environment files, and only the
 * binary is the simulation's — node preparation installs the release server's stand-in, which
 * is no kubelet.
 */
export const SIM_KUBELET_DROP_IN = [
  "# SIMULATION (test double): the kubelet of a kubeforge test node is the simulated one.",
  "[Service]",
  "ExecStart=",
  `ExecStart=${SIM_DIR}/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS`,
  "",
].join("\n");

/** Whether this machine can run the Docker tests (dockerd and mmdebstrap are installed). */
export const dockerTestsUnavailable = (): string | undefined => {
  for (const bin of ["/usr/sbin/dockerd", "/usr/bin/docker", "/usr/bin/mmdebstrap"]) {
    if (!existsSync(bin))
      return `${bin} is not installed (.ci/run installs docker.io and mmdebstrap)`;
  }
  return undefined;
};
