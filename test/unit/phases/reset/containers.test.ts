import { describe, expect, it } from "vitest";
import {
  CrictlMissingError,
  REMOVE_CONTAINER_RETRY,
  removeKubernetesContainers,
} from "../../../../src/phases/reset/containers.js";
import { LocalHost } from "../../../../src/remote/local.js";
import { HostDouble, onPath, type CommandStub } from "../../../support/host-double.js";
import { CRI } from "./fixtures.js";

// kubeadm's ListKubeContainers + RemoveContainers (util/runtime, v1.35) done with crictl:
// every pod sandbox is stopped then removed, each pair retried up to RemoveContainerRetry times.

const CRICTL = "/usr/local/bin/crictl";
const A = "a".repeat(64);
const B = "b".repeat(64);

function crictlHost(extra: CommandStub[] = [], list = `${A}\n${B}\n`) {
  return new HostDouble(new LocalHost(), {
    commands: [
      onPath("crictl", CRICTL),
      ...extra,
      { match: [CRICTL, "--runtime-endpoint", CRI, "pods", "-q"], result: { stdout: list } },
      { match: [CRICTL], result: { code: 0 } },
    ],
  });
}

const crictlCalls = (host: HostDouble) =>
  host.calls.filter((c) => c.argv[0] === CRICTL).map((c) => c.argv.slice(3).join(" "));

describe("removeKubernetesContainers", () => {
  it("lists every sandbox, then stops and removes each in turn, as root", async () => {
    const host = crictlHost();
    expect(await removeKubernetesContainers(host, CRI)).toEqual({ sandboxes: [A, B] });
    expect(crictlCalls(host)).toEqual([
      "pods -q",
      `stopp ${A}`,
      `rmp ${A}`,
      `stopp ${B}`,
      `rmp ${B}`,
    ]);
    const calls = host.calls.filter((c) => c.argv[0] === CRICTL);
    expect(calls.every((c) => c.opts.sudo === true)).toBe(true);
    // Listing only reads: a dry run runs it for real; stop and remove are changes.
    expect(calls.map((c) => c.opts.readOnly === true)).toEqual([true, false, false, false, false]);
  });

  it("does nothing more when the runtime has no sandbox", async () => {
    const host = crictlHost([], "");
    expect(await removeKubernetesContainers(host, CRI)).toEqual({ sandboxes: [] });
    expect(crictlCalls(host)).toEqual(["pods -q"]);
  });

  it("retries a sandbox whose stop fails, and goes on with the others", async () => {
    let failures = 2;
    const host = crictlHost([
      {
        match: (argv) => argv[3] === "stopp" && argv[4] === A && failures-- > 0,
        result: { code: 1, stderr: "rpc error: code = DeadlineExceeded" },
      },
    ]);
    await removeKubernetesContainers(host, CRI);
    expect(crictlCalls(host)).toEqual([
      "pods -q",
      `stopp ${A}`,
      `stopp ${A}`,
      `stopp ${A}`,
      `rmp ${A}`,
      `stopp ${B}`,
      `rmp ${B}`,
    ]);
  });

  it(`gives up on a sandbox after ${REMOVE_CONTAINER_RETRY} attempts and reports it after the others`, async () => {
    const host = crictlHost([
      {
        match: (argv) => argv[3] === "rmp" && argv[4] === B,
        result: { code: 1, stderr: `sandbox container "${B}" is not fully stopped` },
      },
    ]);
    await expect(removeKubernetesContainers(host, CRI)).rejects.toThrow(
      new RegExp(`^failed to remove pod ${B}: .*is not fully stopped`),
    );
    expect(crictlCalls(host).filter((c) => c === `rmp ${B}`)).toHaveLength(REMOVE_CONTAINER_RETRY);
    expect(crictlCalls(host)).toContain(`rmp ${A}`);
  });

  it("fails with the runtime's answer when the sandboxes cannot be listed", async () => {
    const host = crictlHost([
      {
        match: (argv) => argv[3] === "pods",
        result: {
          code: 1,
          stderr: 'validate CRI v1 runtime API for endpoint "x": connection refused',
        },
      },
    ]);
    await expect(removeKubernetesContainers(host, CRI)).rejects.toThrow(
      /^failed to list pod sandboxes: .*connection refused/,
    );
  });

  it("says crictl is missing when it is not on the PATH", async () => {
    const host = new HostDouble(new LocalHost(), { commands: [onPath("crictl", undefined)] });
    await expect(removeKubernetesContainers(host, CRI)).rejects.toBeInstanceOf(CrictlMissingError);
  });
});
