import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForCluster } from "../../../src/cluster/readiness.js";
import { waitForKubelet } from "../../../src/kube/health.js";
import { poll } from "../../../src/kube/poll.js";
import type { ClusterAccess, KubeClient } from "../../../src/kube/types.js";
import { interrupt } from "../../../src/remote/interruption.js";
import { LocalHost } from "../../../src/remote/local.js";
import { SshHost } from "../../../src/remote/ssh/host.js";
import { TerminalReporter } from "../../../src/workflow/reporter.js";
import { Runner } from "../../../src/workflow/runner.js";
import { eventually, running, waitForFile } from "../../support/processes.js";
import { startSshd, type Sshd } from "../../support/sshd.js";

// An interrupted run (SIGINT, SIGTERM: remote/interruption.ts) cancels every command running
// on every host, over SSH as on this machine, and refuses every later one. interrupt() is for
// the whole process: this file has its own (vitest runs each file in a fresh process).

let sshd: Sshd;
let ssh: SshHost;
const local = new LocalHost({ name: "runner" });

beforeAll(async () => {
  sshd = await startSshd();
  ssh = await SshHost.connect({
    name: "n1",
    endpoint: { host: sshd.address, port: 22, user: "root" },
    credentials: { privateKey: sshd.keys.plain.privateKey },
    hostKeys: { fingerprints: [sshd.hostKey.fingerprint] },
  });
});

afterAll(async () => {
  await ssh?.close();
  await sshd?.close();
});

describe("interrupt()", () => {
  it("cancels the commands running on every host and every later one", async () => {
    const sleeper = (pidFile: string) => [
      "sh",
      "-c",
      'echo $$ > "$1"; exec sleep 300',
      "sh",
      pidFile,
    ];
    const remotePid = join(sshd.dir, "remote.pid");
    const localPid = join(sshd.dir, "local.pid");
    // No signal given by the callers: the run's interruption alone ends them.
    const failure = (run: Promise<unknown>) =>
      run.then(
        () => new Error("it was not cancelled"),
        (e: unknown) => e as Error,
      );
    const remote = failure(ssh.exec(sleeper(remotePid)));
    const onRunner = failure(local.exec(sleeper(localPid)));
    const pids = [
      Number(await waitForFile(remotePid, 10_000)),
      Number(await waitForFile(localPid, 10_000)),
    ];

    const started = Date.now();
    interrupt(new Error("interrupted by SIGINT"));
    const [remoteError, localError] = await Promise.all([remote, onRunner]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(remoteError.message).toBe(`${ssh.label}: cancelled "${sleeper(remotePid).join(" ")}"`);
    expect(localError.message).toBe(`runner: cancelled "${sleeper(localPid).join(" ")}"`);
    for (const e of [remoteError, localError])
      expect((e.cause as Error).message).toBe("interrupted by SIGINT");
    for (const pid of pids) expect(await eventually(() => !running(pid), 2_000)).toBe(true);

    // Nothing starts after it.
    const late = join(sshd.dir, "late");
    await expect(ssh.exec(["touch", late])).rejects.toThrow(/cancelled "touch/);
    await expect(local.exec(["touch", `${late}.local`])).rejects.toThrow(/cancelled "touch/);
    await expect(readFile(late)).rejects.toThrow();
    await expect(readFile(`${late}.local`)).rejects.toThrow();
  }, 30_000);

  it("ends the waits on the API too: a wait of minutes stops at once", async () => {
    interrupt(new Error("interrupted by SIGINT"));
    const started = Date.now();
    const waited = (await poll(() => Promise.resolve(undefined), {
      timeoutMs: 300_000,
      what: "the Node cp-1 to exist",
    }).catch((e: unknown) => e)) as Error;
    expect(waited.message).toBe("stopped waiting for the Node cp-1 to exist");
    expect((waited.cause as Error).message).toBe("interrupted by SIGINT");
    // The API is never asked: the client would throw.
    const client = new Proxy({} as KubeClient, {
      get: () => () => Promise.reject(new Error("the API was called")),
    });
    const ready = (await waitForCluster(client, ["cp-1"], {
      timeoutMs: 300_000,
      dnsDisabled: false,
      log: () => {},
    }).catch((e: unknown) => e)) as Error;
    expect(ready.message).toBe("stopped waiting for the cluster to be ready");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("starts no further phase, and a cancelled wait is not reported as a timeout", async () => {
    interrupt(new Error("interrupted by SIGINT"));
    const ran: string[] = [];
    const reporter = new TerminalReporter({ write: () => {} });
    const runner = new Runner<object>(
      [
        {
          name: "kubelet-start",
          short: "",
          run: () => Promise.resolve(void ran.push("kubelet-start")),
        },
      ],
      reporter,
    );
    await expect(runner.run({})).rejects.toThrow(
      "error execution phase kubelet-start: not started: the run was interrupted",
    );
    expect(ran).toEqual([]);
    // The kubelet wait of four minutes stops at once and says why, not "not healthy after 4m0s".
    const access = {
      probe: () => Promise.reject(new Error("the kubelet was probed")),
    } as unknown as ClusterAccess;
    const started = Date.now();
    const e = (await waitForKubelet(access, {
      url: "http://127.0.0.1:10248/healthz",
      timeoutMs: 240_000,
      log: () => {},
    }).catch((x: unknown) => x)) as Error;
    expect(e.message).toBe(
      "stopped waiting for the kubelet at http://127.0.0.1:10248/healthz to be healthy",
    );
    expect((e.cause as Error).message).toBe("interrupted by SIGINT");
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
