import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { clusterFile } from "../up/support.js";
import {
  bundledMain,
  bundledPost,
  filesOf,
  runStep,
  stepReport,
  type StepResult,
} from "./support.js";

// The post step after a main step that stopped early — bad inputs, a host it could not reach, a
// dry run that failed — run as the runner runs them: main.js, then post.js with the same inputs
// and main's saved state. The post step says what it can, collects what exists, does not go
// through the connection retries main already went through, and calls nothing "left behind"
// that main never touched.

let bed: SshTestbed;
let cp: SshTestHost;
let mainJs: string;
let postJs: string;
let work: string;

/** cp-1 (reachable) and a worker whose SSH port refuses every connection. */
function cluster(name: string): string {
  const pin = `SHA256:${"A".repeat(43)}`;
  return clusterFile({ name, controlPlanes: [cp], workers: [] }).replace(
    /^(- \{name: cp-1, .*\n)/m,
    `$1- {name: gone, role: worker, host: "ssh://root@127.0.0.1:1", ssh: {hostKeyFingerprints: ["${pin}"]}}\n`,
  );
}

interface Steps {
  main: StepResult;
  post: StepResult;
  diagDir: string;
}

/** main.js, then post.js with main's saved state, in one RUNNER_TEMP. */
async function mainThenPost(name: string, inputs: Record<string, string>): Promise<Steps> {
  const runnerTemp = await mkdtemp(join(work, "runner-temp-"));
  const main = await runStep(mainJs, { inputs, runnerTemp, timeoutMs: 120_000 });
  const state: Record<string, string> = {};
  for (const [k, v] of main.state) state[`STATE_${k}`] = v;
  const post = await runStep(postJs, { inputs, runnerTemp, env: state, timeoutMs: 120_000 });
  return { main, post, diagDir: join(runnerTemp, `kubeforge-${name}-diagnostics`) };
}

/** The post step's own lines: the printed tails of collected files (main's log) left out. */
function ownLines(stdout: string): string {
  return stdout.replace(/^::stop-commands::(\w+)$[\s\S]*?^::\1::$/gm, "");
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  [bed, mainJs, postJs] = await Promise.all([
    createTestbed(["cp-1"], { ssh: true }),
    bundledMain(),
    bundledPost(),
  ]);
  cp = bed.host("cp-1");
  work = await mkdtemp(join(tmpdir(), "kubeforge-post-early-"));
}, 180_000);

afterAll(async () => {
  await bed?.stop();
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe("action post step after an early main failure", () => {
  it.each<{ input: string; inputs: Record<string, string> }>([
    { input: "name", inputs: { name: "Not_A_Label" } },
    { input: "service-cidr", inputs: { "service-cidr": "not-a-cidr" } },
  ])(
    "bad input $input: nothing to collect or tear down, quietly",
    async ({ input, inputs }) => {
      const { main, post, diagDir } = await mainThenPost("early", {
        cluster: cluster("early"),
        ...inputs,
      });
      expect(main.code).toBe(1);
      expect(main.stdout).toMatch(new RegExp(`^::error::input ${input}: `, "m"));
      if (post.code !== 0) throw new Error(stepReport(post));
      expect(post.stdout).toMatch(
        new RegExp(`^kubeforge post: input ${input}: .*; nothing to collect or tear down$`, "m"),
      );
      // main already failed on it: no annotation again, no connection, no folder.
      expect(post.stdout).not.toMatch(/^::(warning|error)::/m);
      expect(post.stdout).not.toContain("::group::");
      expect(await exists(diagDir)).toBe(false);
    },
    120_000,
  );

  it("a host main could not reach: not tried again, not called left behind; the rest collected", async () => {
    const { main, post, diagDir } = await mainThenPost("early", {
      cluster: cluster("early"),
      teardown: "auto",
    });
    expect(main.code).toBe(1);
    expect(main.stdout).toMatch(/^::error::failed on 1 of 2 hosts:%0A - gone: /m);
    expect(main.state.get("hosts-reached")).toBe("cp-1");
    expect(main.state.get("hosts-unreachable")).toBe("gone");
    if (post.code !== 0) throw new Error(stepReport(post));

    expect(post.stdout).toContain("the main step failed (in connect): collecting diagnostics");
    expect(post.stdout).toMatch(/retrying in \d+ ms/); // main's, in its log's printed tail
    // One round of connection retries was main's; post goes through none.
    expect(ownLines(post.stdout)).not.toMatch(/retrying in \d+ ms/);
    const files = await filesOf(diagDir);
    expect(files["gone/connection.txt"]).toMatch(
      /could not connect to gone: the main step could not connect to gone \(its error is in kubeforge\.log\); not tried again/,
    );
    expect(Object.keys(files)).toContain("cp-1/kubelet.log");
    expect(files["kubeforge.log"]).toMatch(/^ERROR: failed on 1 of 2 hosts:\n - gone: /m);

    // Teardown: cp-1 carries nothing of kubeforge's, gone was never touched; no warning at all.
    expect(post.stdout).toContain("cp-1: nothing of kubeforge's on it");
    expect(post.stdout).toContain(
      "gone: left as it is: the main step could not connect to it, so nothing of this run's is there",
    );
    expect(post.stdout).not.toContain("left behind");
    expect(post.stdout).not.toMatch(/^::warning::/m);
    expect(await readdir(cp.path("etc/kubernetes")).catch(() => [])).toEqual([]);
  }, 180_000);

  it("a dry run that failed: kubeforge's log is collected, no node is contacted", async () => {
    const { main, post, diagDir } = await mainThenPost("early-plan", {
      cluster: cluster("early-plan"),
      "dry-run": "true",
    });
    expect(main.code).toBe(1);
    if (post.code !== 0) throw new Error(stepReport(post));
    expect(post.stdout).toContain("the main step failed (in connect): collecting its log");
    expect(post.stdout).toContain("kubeforge: dry run: nothing was changed, nothing to tear down");
    const files = await filesOf(diagDir);
    expect(Object.keys(files)).toEqual(["kubeforge.log"]);
    expect(files["kubeforge.log"]).toMatch(/^ERROR: failed on 1 of 2 hosts:\n - gone: /m);
    expect(post.stdout).toContain("::group::kubeforge diagnostics: kubeforge");
    expect(ownLines(post.stdout)).not.toMatch(/retrying in \d+ ms/);
    expect(post.stdout).not.toMatch(/^::warning::/m);
  }, 180_000);
});
