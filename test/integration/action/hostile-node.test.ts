import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import { runnerCommands, type RunnerCommand } from "../../support/runner-commands.js";
import { clusterFile } from "../up/support.js";
import { bundledMain, bundledPost, runStep, stepReport, type StepResult } from "./support.js";

// Nodes are not trusted (README "Security model"): what they say reaches the action's log —
// their OS name, the cluster named in their kubeforge state file, their logs — and none of it
// may become a workflow command. Two testbed hosts carry such payloads; the action's main step
// (dist/main.js as the runner runs it) inspects them and refuses the one that belongs to another
// cluster, then the post step collects diagnostics and tears down. Every line of both steps'
// output is parsed as the runner parses it (test/support/runner-commands.ts): the only commands
// are kubeforge's own, none carries a payload, and no output was set from the log.

/** Every payload starts its command's data with this marker; kubeforge's own never does. */
const MARK = "PWNED";

// The runner ends a line at "\r" too: a line of a node's may start anywhere in a value.
const OS_NAME = [
  "Debian GNU/Linux 12",
  `::set-output name=api-server::${MARK}-os`,
  `  ::add-mask::${MARK}-os-mask`,
  `##[warning]${MARK}-os-legacy`,
  `\u00a0::error::${MARK}-os-error`,
].join("\r");

const CLUSTER_NAME = [
  "other",
  `::warning::${MARK}-marker`,
  `::stop-commands::${MARK}-stop`,
  `::add-mask::${MARK}-marker-mask`,
  `##[set-output name=api-server;]${MARK}-legacy`,
  `\u0085::group::${MARK}-group`,
].join("\r\n");

/** What kubeforge itself issues: masks, log groups, the diagnostics' stop-commands, annotations. */
const OWN = new Set([
  "add-mask",
  "group",
  "endgroup",
  "stop-commands",
  "warning",
  "error",
  "notice",
]);

let bed: SshTestbed;
let mainJs: string;
let postJs: string;

beforeAll(async () => {
  [bed, mainJs, postJs] = await Promise.all([
    createTestbed(["cp-1", "w-1"], { ssh: true }),
    bundledMain(),
    bundledPost(),
  ]);
  // The host's own /etc/os-release: Debian's is a link into /usr/lib, which the host shares
  // with the machine, so the link is replaced (in the host's /etc overlay), never written through.
  const machineOs = await readFile("/etc/os-release", "utf8");
  const written = await bed
    .host("cp-1")
    .sshRun(
      '[ "$(findmnt -n -o FSTYPE -T /etc)" = overlay ] && rm -f /etc/os-release && cat > /etc/os-release',
      {
        stdin: `PRETTY_NAME="${OS_NAME}"\nID=debian\n`,
      },
    );
  if (written.code !== 0) throw new Error(`cannot write cp-1's os-release: ${written.stderr}`);
  if ((await readFile("/etc/os-release", "utf8")) !== machineOs) {
    throw new Error("the test host's /etc/os-release is the machine's");
  }
  const marker = bed.host("w-1").path("var/lib/kubeforge/node.json");
  await mkdir(dirname(marker), { recursive: true });
  await writeFile(
    marker,
    JSON.stringify({
      cluster: CLUSTER_NAME,
      node: "w-1",
      role: "worker",
      status: "done",
      kubernetesVersion: "v1.35.0",
    }),
  );
}, 180_000);

afterAll(async () => {
  // The bundles are the run's, shared with other files: the run removes them.
  await bed?.stop();
}, 120_000);

/** The commands in a step's output that are not kubeforge's own, or carry a node's payload. */
function foreignCommands(step: StepResult): RunnerCommand[] {
  return runnerCommands(step.stdout).filter(
    (c) =>
      c.form !== "v2" ||
      !OWN.has(c.command) ||
      c.data.trimStart().startsWith(MARK) ||
      (c.command !== "warning" && c.command !== "error" && c.data.includes(MARK)),
  );
}

describe("a node's words in the action's log", () => {
  it("main and post steps print them, and the runner would act on none", async () => {
    const cluster = clusterFile({
      name: "ci",
      controlPlanes: [bed.host("cp-1")],
      workers: [bed.host("w-1")],
    })
      .replace(/^ {2}privateKeyFile: .*\n/m, "")
      .replace(/, ssh: \{hostKeyFingerprints: \["[^"]*"\]\}/g, "");
    const inputs = {
      cluster,
      "ssh-private-key": await readFile(bed.hosts[0]!.ssh.privateKeyFile, "utf8"),
      "ssh-host-key-fingerprints": bed.hosts.map((h) => h.ssh.hostKeyFingerprint).join("\n"),
      teardown: "auto",
    };
    const main = await runStep(mainJs, { inputs, timeoutMs: 300_000 });
    // w-1 belongs to the other cluster: refused before any host changes.
    expect(main.code, stepReport(main)).toBe(1);
    // The payloads did reach the log: the node's facts, the refusal.
    expect(main.stdout).toContain("Debian GNU/Linux 12\\r::set-output name=api-server");
    expect(main.stdout).toMatch(/::error::.*w-1: it belongs to the kubeforge cluster "other\\r/);

    const post = await runStep(postJs, {
      inputs,
      runnerTemp: main.runnerTemp,
      env: Object.fromEntries([...main.state].map(([k, v]) => [`STATE_${k}`, v])),
      timeoutMs: 300_000,
    });
    expect(post.code, stepReport(post)).toBe(0);
    expect(post.stdout).toContain("left alone: it belongs to the cluster");

    for (const step of [main, post]) {
      expect(foreignCommands(step), stepReport(step)).toEqual([]);
      expect(step.outputs.get("api-server") ?? "").not.toContain(MARK);
      for (const m of step.masks) expect(m).not.toContain(MARK);
    }
    // The node's words stayed inert in kubeforge's own log and in the job summary.
    const log = await readFile(`${main.runnerTemp}/kubeforge-ci/kubeforge.log`, "utf8");
    expect(runnerCommands(log)).toEqual([]);
    expect(runnerCommands(main.summary)).toEqual([]);
  }, 600_000);
});
