import { readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { XMLParser } from "fast-xml-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mermaidBlocks, readGantt } from "../../support/mermaid-gantt.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { fileDir } from "../../support/temp-dir.js";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import { clusterFile } from "../up/support.js";
import { bundledMain, runStep, stepReport, type StepResult } from "./support.js";

// The action's upgrade rehearsal (upgrade-to) through the bundled main.js, as the runner runs
// it, on the cheapest cluster there is: one control-plane testbed host over real SSH, its
// kubelet and API server the simulation (etcd is Debian's). The target kubelet and kubectl come
// from the local release server (binaries whose trailer names their version: the simulated
// kubelet reports it after its restart, test/support/sim/kubelet/binary.ts), as in
// test/integration/upgrade/cluster-upgrade.test.ts, which covers workers, drains and refusals
// of the workflow itself. The cluster is built two minors below the target, so the upgrade
// chains two hops (upgrade-via auto). Here: two minors without upgrade-via refused before
// anything is contacted; a dry run that prints the first hop's plan and the route, and changes
// nothing; a build whose upgrade passes the first hop and fails in the second (the target
// kubelet's download is an HTML page), with the report written and the outputs set; then a
// later step, given the version the cluster runs now, that takes the second hop.

const FROM = "v1.34.7";
// upgrade-via auto goes through stable-1.35: the release server has no label files, so the
// version table's newest v1.35 answers (what an offline resolver does, with a warning).
const MIDDLE = "v1.35.8";
const TARGET = "v1.36.3";
const NAME = "rehearsal";

let bed: SshTestbed;
let server: ReleaseServer;
let mainJs: string;
let cluster: string;
let caFile: string;
/** The users' own kubelet build of the target (upgrade-kubelet-binary). */
let usersKubelet: string;

/** The release server's kubelet of the target (amd64 or arm64, as this machine). */
const kubeletPath = () =>
  `/dl/release/${TARGET}/bin/linux/${process.arch === "arm64" ? "arm64" : "amd64"}/kubelet`;

const step = (inputs: Record<string, string>, runnerTemp?: string) =>
  runStep(mainJs, {
    inputs: { cluster, name: NAME, "kubernetes-version": FROM, ...inputs },
    // Labels (upgrade-to 1.36) are looked up there: not found, the version table answers.
    env: { NODE_EXTRA_CA_CERTS: caFile, KUBEFORGE_RELEASE_BASE_URL: `${server.url}/dl/release` },
    ...(runnerTemp ? { runnerTemp } : {}),
    // An upgrade step takes about 3 minutes alone and more than twice that on a loaded machine.
    timeoutMs: 840_000,
  });

const errorsOf = (s: StepResult) => s.stdout.split("\n").filter((l) => l.startsWith("::error::"));
const groupsOf = (s: StepResult) => [...s.stdout.matchAll(/^::group::(.*)$/gm)].map((m) => m[1]);
const hostFiles = () => readdir(bed.host("cp-1").path("etc/kubernetes")).catch(() => []);

interface Report {
  kind: string;
  from: string;
  to: string;
  result: string;
  error?: string;
  api?: { endpoints: { kind: string; longestOutageSeconds: number; outages: unknown[] }[] };
  nodes: {
    name: string;
    role: string;
    result: string;
    kubeletBefore?: string;
    kubeletAfter?: string;
    steps: { name: string; startedAt: string; seconds: number; result: string; hop?: string }[];
  }[];
  hops?: { from?: string; to: string; result: string; etcdSnapshot?: { path: string } }[];
  disruptions?: { notReadyAfterSeconds: number; disruptions: { during: string[] }[] };
  violations?: { threshold: string; limit: string; measured: string; message: string }[];
}

beforeAll(async () => {
  [bed, mainJs, server] = await Promise.all([
    // The simulated kubelet reports the version the cluster is built at.
    createTestbed(["cp-1"], { ssh: true, kubeletVersions: { "cp-1": FROM } }),
    bundledMain(),
    startReleaseServer(),
  ]);
  const dir = await fileDir("kubeforge-action-upgrade-");
  caFile = join(dir, "release-ca.pem");
  await writeFile(caFile, server.ca);
  // A kubelet "built by the user": the release server's kind of binary (/bin/true and a trailer
  // the simulated kubelet reads its version from) under another path.
  usersKubelet = join(dir, "users-kubelet");
  await writeFile(
    usersKubelet,
    Buffer.concat([
      await readFile("/bin/true"),
      Buffer.from(`\n#kubeforge-test /users-build/${TARGET}/bin/linux/amd64/kubelet\n`),
    ]),
    { mode: 0o755 },
  );
  // The host is prepared already (the simulated kubelet and runtime); the upgrade's binaries
  // come from the local release server.
  cluster = clusterFile({
    name: NAME,
    controlPlanes: [bed.host("cp-1")],
    workers: [],
    kubernetesDownloads: server.sources.kubernetes,
  });
}, 240_000);

afterAll(async () => {
  await bed?.stop();
  await server?.close();
}, 120_000);

describe("action main step with upgrade-to", () => {
  it("refuses two minors at once without upgrade-via before any host is contacted, naming the input", async () => {
    const refused = await step({ "upgrade-to": TARGET });
    expect(refused.code).toBe(1);
    expect(errorsOf(refused)).toEqual([
      `::error::input upgrade-to: upgrade-to ${TARGET} is 2 minors above the cluster's ${FROM}: kubeforge upgrades one minor per hop; upgrade to v1.35 first, or give upgrade-via auto to go through every minor in one run; nothing was changed`,
    ]);
    expect(groupsOf(refused)).toEqual([]);
    expect(refused.outputs.size).toBe(0);
    expect(await hostFiles()).toEqual([]);
  }, 120_000);

  it("dry run: prints the first hop's plan and the route after up's, and changes nothing", async () => {
    const dry = await step({ "upgrade-to": TARGET, "upgrade-via": "auto", "dry-run": "true" });
    if (dry.code !== 0) throw new Error(stepReport(dry));
    expect(dry.outputs.get("kubernetes-version")).toBe(FROM);
    expect(dry.outputs.get("upgrade-from")).toBe(FROM);
    expect(dry.outputs.has("upgrade-report")).toBe(false);
    const plan = `# kubeforge upgrade --plan: cluster "${NAME}" from ${FROM} to ${MIDDLE}; nothing was changed`;
    expect(dry.stdout).toContain(`[upgrade] ${plan}`);
    expect(dry.stdout).toContain(
      `[upgrade] # hops (--via): ${FROM} → ${MIDDLE} → ${TARGET}; this is the first`,
    );
    expect(dry.stdout).toContain(
      `[upgrade] 1. cp-1 (control-plane): upgrade apply, kubelet, gate — ${FROM} → ${MIDDLE}`,
    );
    expect(dry.summary).toContain(`<pre>${plan.replace(/"/g, "&quot;")}`);
    // Only the label the route goes through was looked up; nothing downloaded.
    expect(server.requests).toEqual(["/dl/release/stable-1.35.txt"]);
    expect(await hostFiles()).toEqual([]);
  }, 180_000);

  let runnerTemp: string;

  it("a failed upgrade fails the step with the report written and the outputs set", async () => {
    // The target kubelet's download is an error page: the first hop goes through, gated; the
    // second stops while staging, before any node changes in it.
    server.fault(kubeletPath(), "html");
    const failed = await step({
      "upgrade-to": TARGET,
      "upgrade-via": "auto",
      "upgrade-drain-timeout": "1m",
    });
    server.fault(kubeletPath(), undefined);
    expect(failed.code, stepReport(failed)).toBe(1);
    runnerTemp = failed.runnerTemp;
    const stateDir = join(runnerTemp, `kubeforge-${NAME}`);
    const [error] = errorsOf(failed);
    expect(error).toContain(kubeletPath());
    // The cluster was built: its outputs are set, at the version it runs (the first hop's).
    expect(failed.outputs.get("kubernetes-version")).toBe(MIDDLE);
    expect(failed.env.get("KUBECONFIG")).toBe(join(stateDir, "admin.conf"));
    const reportPath = join(stateDir, "upgrade-report.json");
    expect(failed.outputs.get("upgrade-report")).toBe(reportPath);
    expect(failed.outputs.get("upgrade-from")).toBe(FROM);
    expect(failed.outputs.get("upgrade-result")).toBe("failed");
    // The probes ran through the first hop.
    expect(failed.outputs.has("api-downtime-seconds")).toBe(true);
    const report = JSON.parse(await readFile(reportPath, "utf8")) as Report;
    expect(report).toMatchObject({
      kind: "UpgradeReport",
      from: FROM,
      to: TARGET,
      result: "failed",
    });
    expect(report.error).toContain(kubeletPath());
    expect(report.hops!.map((h) => [h.from, h.to, h.result])).toEqual([
      [FROM, MIDDLE, "succeeded"],
      [MIDDLE, TARGET, "failed"],
    ]);
    // The first hop upgraded and gated cp-1 (the gate waits for the kubelet at the hop's version);
    // the second took its etcd snapshot beside its staging, which then failed: nothing changed.
    const [cp] = report.nodes;
    expect(cp).toMatchObject({ name: "cp-1", result: "upgraded", kubeletBefore: FROM });
    expect(cp!.steps.map((s) => [s.hop, s.name, s.result])).toEqual([
      [MIDDLE, "etcd-snapshot", "ok"],
      [MIDDLE, "upgrade-apply", "ok"],
      [MIDDLE, "kubelet", "ok"],
      [MIDDLE, "gate", "ok"],
      [TARGET, "etcd-snapshot", "ok"],
    ]);
    expect(report.hops![1]!.etcdSnapshot?.path).toMatch(
      new RegExp(`^/var/lib/kubeforge/upgrade/${TARGET}/etcd-snapshot-`),
    );
    expect(
      await bed.host("cp-1").sshOutput("tail -c 200 /usr/local/bin/kubelet", { timeoutMs: 60_000 }),
    ).toContain(`/dl/release/${MIDDLE}/bin/linux/`);
    const junit = await readFile(join(stateDir, "junit-upgrade.xml"), "utf8");
    expect(junit).toContain(`<testcase classname="cp-1" name="${MIDDLE} gate"`);
    expect(junit).toContain('<testcase classname="rehearsal" name="upgrade" time="0"><failure');
    // One summary, of the failed step: the build, the upgrade that failed, its report.
    expect(failed.summary.match(/<h3>kubeforge: cluster/g)).toHaveLength(1);
    expect(failed.summary).toContain(`kubeforge: cluster ${NAME} (failed)`);
    expect(failed.summary).toContain(`<tr><th>Upgrade</th><td>${FROM} → ${TARGET}, failed in `);
    expect(groupsOf(failed)).toContain("stage");
    expect(failed.state.get("outcome")).toBe("failure");
  }, 900_000);

  it("a later step finds the cluster at the first hop's version and takes the second: outputs, report, summary; a workload threshold exceeded fails the step after it", async () => {
    // The API probed (upgrade-probes' default), held to a threshold a single control plane keeps;
    // and a probe command that never succeeds, held to an error rate it cannot keep.
    const done = await step(
      {
        // The cluster runs the first hop's version now: `up` would refuse the old one (README).
        "kubernetes-version": MIDDLE,
        "upgrade-to": "1.36",
        "upgrade-via": "auto",
        "upgrade-worker-batch": "2",
        "upgrade-max-api-downtime": "10m",
        "upgrade-probe-command": "exit 3",
        "upgrade-max-workload-error-rate": "50%",
        "upgrade-kubelet-binary": usersKubelet,
      },
      runnerTemp,
    );
    // The upgrade finished; the step fails for the threshold alone, naming it.
    if (done.outputs.get("upgrade-result") !== "thresholds-violated") {
      throw new Error(stepReport(done));
    }
    expect(done.code).not.toBe(0);
    const errors = errorsOf(done);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^::error::the upgrade finished, and a threshold was exceeded \(the report is .*upgrade-report\.json\):%0A - max-workload-error-rate 50%25: the workload probe-command failed (\d+) of \1 requests \(error rate 1\)$/,
    );
    expect(done.outputs.get("workload-error-rate")).toBe("1");
    const stateDir = join(runnerTemp, `kubeforge-${NAME}`);
    // up found every node built; the upgrade resolved 1.36 (stable-1.36) to the release table's
    // newest patch, the one the release server serves.
    expect(JSON.parse(done.outputs.get("nodes")!)).toMatchObject([
      { name: "cp-1", action: "none" },
    ]);
    expect(done.outputs.get("kubernetes-version")).toBe(TARGET);
    // The run starts where the cluster is: the first hop's version.
    expect(done.outputs.get("upgrade-from")).toBe(MIDDLE);
    const reportPath = done.outputs.get("upgrade-report")!;
    expect(reportPath).toBe(join(stateDir, "upgrade-report.json"));
    const report = JSON.parse(await readFile(reportPath, "utf8")) as Report;
    expect(report).toMatchObject({ from: MIDDLE, to: TARGET, result: "thresholds-violated" });
    expect(report.violations).toMatchObject([
      { threshold: "max-workload-error-rate", limit: "50%", measured: "1" },
    ]);
    expect(report.violations![0]!.message).toContain("the workload probe-command failed");
    // From there the route has one hop left.
    expect(report.hops!.map((h) => [h.from, h.to, h.result])).toEqual([
      [MIDDLE, TARGET, "succeeded"],
    ]);
    // The workloads were watched with the probes; a disruption names only cp-1's steps (no
    // other node had any).
    expect(report.disruptions!.notReadyAfterSeconds).toBe(5);
    for (const d of report.disruptions!.disruptions) {
      expect(
        d.during.every((s) => s.startsWith("cp-1 ")),
        JSON.stringify(d),
      ).toBe(true);
    }
    // api-downtime-seconds: the longest outage through admin.conf's server, as the report says.
    const stable = report.api!.endpoints.find((e) => e.kind === "stable")!;
    expect(done.outputs.get("api-downtime-seconds")).toBe(String(stable.longestOutageSeconds));
    expect(done.summary).toContain("<th>API endpoint</th>");
    expect(done.summary).toContain("<p>Threshold held: max-api-downtime 10m</p>");
    expect(done.summary).toContain(
      "<p>Threshold exceeded: max-workload-error-rate 50%: the workload probe-command failed",
    );
    const [cp] = report.nodes;
    expect(cp).toMatchObject({
      name: "cp-1",
      result: "upgraded",
      kubeletBefore: MIDDLE,
      kubeletAfter: TARGET,
    });
    expect(cp!.steps.map((s) => [s.hop, s.name, s.result])).toEqual([
      [TARGET, "etcd-snapshot", "ok"],
      [TARGET, "upgrade-apply", "ok"],
      [TARGET, "kubelet", "ok"],
      [TARGET, "gate", "ok"],
    ]);
    // node-timings: the node's span, from its first step's start to its last step's end.
    const last = cp!.steps.at(-1)!;
    const span =
      Date.parse(last.startedAt) + last.seconds * 1000 - Date.parse(cp!.steps[0]!.startedAt);
    const timings = JSON.parse(done.outputs.get("node-timings")!) as {
      name: string;
      role: string;
      result: string;
      seconds: number;
    }[];
    expect(timings.map((t) => [t.name, t.role, t.result])).toEqual([
      ["cp-1", "control-plane", "upgraded"],
    ]);
    expect(Math.abs(timings[0]!.seconds * 1000 - span)).toBeLessThan(2);
    expect(timings[0]!.seconds).toBeGreaterThan(0);
    // JUnit beside the report: one case per node and step.
    const xml = new XMLParser({ ignoreAttributes: false }).parse(
      await readFile(join(dirname(reportPath), "junit-upgrade.xml"), "utf8"),
    ) as { testsuites: { testsuite: { "@_failures": string; testcase: { "@_name": string }[] } } };
    expect(xml.testsuites.testsuite["@_failures"]).toBe("1");
    expect(xml.testsuites.testsuite.testcase.map((c) => c["@_name"])).toEqual([
      `${TARGET} etcd-snapshot`,
      `${TARGET} upgrade-apply`,
      `${TARGET} kubelet`,
      `${TARGET} gate`,
      "max-api-downtime 10m",
      "max-workload-error-rate 50%",
    ]);

    // The node runs the users' kubelet build (upgrade-kubelet-binary), the released kubectl.
    const tail = (bin: string) =>
      bed.host("cp-1").sshOutput(`tail -c 200 /usr/local/bin/${bin}`, { timeoutMs: 60_000 });
    expect(await tail("kubelet")).toContain(`/users-build/${TARGET}/`);
    expect(await tail("kubectl")).toContain(`/dl/release/${TARGET}/bin/linux/`);

    // The summary: the version after, the upgrade table, the upgrade's steps in the chart.
    // Upgraded and ready; the step failed on the threshold alone, and the title says which.
    expect(done.summary).toContain(
      `kubeforge: cluster ${NAME} (ready, upgrade thresholds exceeded)`,
    );
    expect(done.summary).toContain(`<tr><th>Kubernetes</th><td>${TARGET}</td></tr>`);
    expect(done.summary).toMatch(
      new RegExp(
        `<tr><td>cp-1</td><td>control-plane</td><td>${MIDDLE} → ${TARGET}</td><td>(\\d+ ms|\\d+\\.\\d s|\\d+ min \\d\\d s)</td>`,
      ),
    );
    expect(done.summary).toContain("<td>not drained</td><td>upgraded</td></tr>");
    expect(done.summary).toMatch(
      /<td>cp-1<\/td><td>control-plane<\/td><td>[^<]+<\/td><td>v1\.36\.3<\/td>/,
    );
    const gantt = readGantt(mermaidBlocks(done.summary)[0]!);
    // API outages, when the probes saw any (cp-1's kube-apiserver restarts), get a section of their own.
    const outages = report.api!.endpoints.some((e) => e.outages.length > 0);
    expect(gantt.sections).toEqual([
      "cluster",
      "upgrade",
      "upgrade cp-1",
      ...(outages ? ["API outages"] : []),
      // The probe command failed throughout: one outage.
      "Workload outages",
    ]);
    const names = (section: string) =>
      gantt.tasks.filter((t) => t.section === section).map((t) => t.name);
    expect(names("upgrade")).toEqual(groupsOf(done).slice(names("cluster").length));
    expect(names("upgrade")).toEqual([
      "connect",
      "facts",
      "plan",
      "stage",
      "etcd snapshot cp-1",
      "probes",
      "upgrade apply cp-1",
      "verify",
    ]);
    expect(names("upgrade cp-1")).toEqual(["etcd-snapshot", "upgrade-apply", "kubelet", "gate"]);
    expect(done.summary).not.toContain(dirname(runnerTemp));
  }, 900_000);
  it("the first step again, at the old kubernetes-version, is not refused: the upgrade finds it done", async () => {
    // After an upgrade (finished, or interrupted once cp-1 was upgraded: its marker names the
    // target either way) up keeps the cluster instead of refusing the old kubernetes-version,
    // and the upgrade resumes; here there is nothing left, so every node is skipped.
    const again = await step({ "upgrade-to": "1.36", "upgrade-via": "auto" }, runnerTemp);
    if (again.code !== 0) throw new Error(stepReport(again));
    expect(again.stdout).toContain(
      `[up] the cluster runs ${TARGET} (recorded on cp-1), the version the upgrade after "up" goes to`,
    );
    expect(again.stdout).toMatch(/already at v1\.36\.3: skipped/);
    expect(again.outputs.get("upgrade-result")).toBe("succeeded");
    expect(again.outputs.get("kubernetes-version")).toBe(TARGET);
    const report = JSON.parse(
      await readFile(again.outputs.get("upgrade-report")!, "utf8"),
    ) as Report;
    expect(report.nodes.map((n) => [n.name, n.result, n.steps.length])).toEqual([
      ["cp-1", "skipped", 0],
    ]);
  }, 900_000);
});
