// kubeadm's ContainerRuntimeVersion preflight check (kubernetes/kubernetes#134906, new in 1.35):
// a warning when the container runtime does not implement the CRI RuntimeConfig method.
// Expected text: what kubeadm prints, as users posted it from real runs —
//   kubeadm v1.35.0/v1.35.1/v1.35.3 init, join and upgrade apply:
//   "[WARNING ContainerRuntimeVersion]: You must update your container runtime to a version that
//   supports the CRI method RuntimeConfig. Falling back to using cgroupDriver from kubelet config
//   will be removed in 1.36. For more information, see
//   https://git.k8s.io/enhancements/keps/sig-node/4033-group-driver-detection-over-cri"
// and the release it names per kubeadm version from the PRs that changed it: #136898 (master,
// v1.36: 1.37), #139122 (CHANGELOG-1.37: 1.38) and its release-1.35 cherry-pick #139268 (1.38).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runtimeConfigFallbackRemovedIn } from "../../../src/config/patch-level.js";
import { releaseFor } from "../../../src/config/versions.js";
import { runChecks, warningLine } from "../../../src/node/preflight/checks.js";
import {
  connectCRI,
  containerRuntimeVersionChecks,
  type CRIConnection,
} from "../../../src/node/preflight/cri.js";
import type { ExecOptions, Host } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import { type CommandStub, HostDouble, onPath } from "../../support/host-double.js";

const KUBEADM_1_35_0_WARNING =
  "You must update your container runtime to a version that supports the CRI method RuntimeConfig. Falling back to using cgroupDriver from kubelet config will be removed in 1.36. For more information, see https://git.k8s.io/enhancements/keps/sig-node/4033-group-driver-detection-over-cri";

const socket = "unix:///var/run/containerd/containerd.sock";
const crictl = "/usr/bin/crictl";
const runtimeConfig = [crictl, "--runtime-endpoint", socket, "runtime-config"];

/** crictl's answers: a runtime that knows RuntimeConfig (containerd 2), or one that does not (1.7). */
const answers: Record<string, CommandStub> = {
  supported: { match: runtimeConfig, result: { stdout: "cgroup driver:   SYSTEMD\n" } },
  unimplemented: {
    match: runtimeConfig,
    result: {
      code: 1,
      stderr:
        'time="2026-11-27T07:00:00Z" level=fatal msg="get runtime config: call RuntimeConfig RPC: rpc error: code = Unimplemented desc = method RuntimeConfig not implemented"\n',
    },
  },
  // A crictl from before cri-tools 1.28 has no such command: kubeforge cannot tell.
  oldCrictl: {
    match: runtimeConfig,
    result: { code: 1, stderr: "No help topic for 'runtime-config'\n" },
  },
};

let rootfs: string;
beforeAll(async () => {
  rootfs = await mkdtemp(join(tmpdir(), "kubeforge-runtime-version-"));
});
afterAll(() => rm(rootfs, { recursive: true, force: true }));

const hostWith = (...commands: CommandStub[]) =>
  new HostDouble(new LocalHost({ rootfs }), { commands });

/** What the checks of kubeadm `version` print on a runtime answering as `answer`. */
async function printed(version: string, answer: CommandStub): Promise<string[]> {
  const host = hostWith(
    onPath("crictl", crictl),
    { match: [crictl, "--runtime-endpoint", socket, "version"], result: { stdout: "v1\n" } },
    answer,
  );
  const connection = await connectCRI(host, socket);
  const checks = containerRuntimeVersionChecks(host, socket, connection, {
    version,
    release: releaseFor(version),
  });
  const lines: string[] = [];
  await runChecks(checks, new Set(), { info: (l) => lines.push(l), warn: (l) => lines.push(l) });
  return lines;
}

describe("connectCRI", () => {
  it("on a runtime that does not answer, lets the questions asked beside it end before it says so", async () => {
    const base = hostWith(
      onPath("crictl", crictl),
      {
        match: [crictl, "--runtime-endpoint", socket, "version"],
        result: { code: 1, stderr: "connect: connection refused\n" },
      },
      answers.supported!,
    );
    const events: string[] = [];
    const host = Object.assign(Object.create(base) as Host, {
      exec: async (argv: string[], opts?: ExecOptions) => {
        const verb = ["runtime-config", "info", "inspecti"].find((v) => argv.includes(v));
        if (verb) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          events.push(`${verb} ended`);
        }
        return base.exec(argv, opts);
      },
    });
    const connection = await connectCRI(
      host,
      socket,
      {},
      { runtimeConfig: true, imagePull: { images: ["registry.k8s.io/pause:3.10.1"] } },
    );
    events.push("connectCRI returned");
    expect(connection).toMatchObject({ connected: false });
    // Nothing is left running on the node once the check has its answer.
    expect(events.at(-1)).toBe("connectCRI returned");
    expect(events.slice(0, -1).sort()).toEqual(
      ["info ended", "inspecti ended", "runtime-config ended"].sort(),
    );
  });
});

describe("ContainerRuntimeVersion", () => {
  it("warns, in kubeadm v1.35.0's words, when the runtime does not implement RuntimeConfig", async () => {
    expect(await printed("v1.35.0", answers.unimplemented!)).toEqual([
      warningLine("ContainerRuntimeVersion", KUBEADM_1_35_0_WARNING),
    ]);
    expect(warningLine("ContainerRuntimeVersion", KUBEADM_1_35_0_WARNING)).toBe(
      `\t[WARNING ContainerRuntimeVersion]: ${KUBEADM_1_35_0_WARNING}`,
    );
  });

  it("says nothing for a runtime that answers, or a crictl too old to ask", async () => {
    expect(await printed("v1.35.0", answers.supported!)).toEqual([]);
    expect(await printed("v1.37.1", answers.oldCrictl!)).toEqual([]);
  });

  it("is a warning, never an error, even with nothing ignored (#135923, the error, is unmerged)", async () => {
    for (const version of ["v1.35.0", "v1.36.3", "v1.37.1"]) {
      await expect(printed(version, answers.unimplemented!)).resolves.toHaveLength(1);
    }
  });

  it("does not exist in kubeadm before 1.35", async () => {
    for (const version of ["v1.33.13", "v1.34.7"]) {
      expect(await printed(version, answers.unimplemented!)).toEqual([]);
    }
  });

  it("asks nothing when kubeforge has no crictl to ask with", () => {
    const host = hostWith();
    const socketOnly: CRIConnection = { connected: true, crictl: undefined };
    const checks = containerRuntimeVersionChecks(host, socket, socketOnly, {
      version: "v1.35.0",
      release: releaseFor("v1.35.0"),
    });
    expect(checks.map((c) => c.name())).toEqual(["ContainerRuntimeVersion"]);
    return expect(checks[0]!.check()).resolves.toEqual({ warnings: [], errors: [] });
  });
});

describe("the release the warning names, by kubeadm version", () => {
  it.each([
    // Users' logs of kubeadm v1.35.0, v1.35.1, v1.35.3.
    ["v1.35.0", "1.36"],
    ["v1.35.3", "1.36"],
    // kubernetes/kubernetes#139268 (release-1.35, merged 2026-09-12) [M: first patch].
    ["v1.35.9", "1.38"],
    // kubernetes/kubernetes#136898 (master before v1.36.0); #139267 (release-1.36) unmerged.
    ["v1.36.0", "1.37"],
    ["v1.36.3", "1.37"],
    // kubernetes/kubernetes#139122 (CHANGELOG-1.37).
    ["v1.37.0", "1.38"],
  ])("kubeadm %s: %s", (version, removedIn) => {
    expect(runtimeConfigFallbackRemovedIn(version, releaseFor(version))).toBe(removedIn);
  });

  it("has no wording before 1.35", () => {
    expect(runtimeConfigFallbackRemovedIn("v1.34.7", releaseFor("v1.34.7"))).toBeUndefined();
  });
});
