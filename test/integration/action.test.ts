import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli } from "../support/cli.js";

// The action's entry points run as the GitHub runner runs them: node <bundle> with INPUT_*
// variables and the GITHUB_OUTPUT / GITHUB_ENV / GITHUB_STATE files.

let bundle: string;
let work: string;

beforeAll(async () => {
  bundle = (await bundledCli()).dir;
  work = await mkdtemp(join(tmpdir(), "kubeforge-action-"));
}, 60_000);

afterAll(async () => {
  await rm(bundle, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

/** Reads a GitHub command file (name<<delimiter ... delimiter) into a map. */
function commandFile(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /^([^<\n]+)<<(\S+)\n([\s\S]*?)\n\2$/gm;
  for (const m of text.matchAll(re)) out.set(m[1]!, m[3]!);
  return out;
}

async function runStep(
  script: string,
  inputs: Record<string, string>,
  extraEnv: Record<string, string> = {},
) {
  const files = Object.fromEntries(
    await Promise.all(
      ["GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"].map(async (k) => {
        const f = join(work, `${k}-${script}-${Math.random().toString(36).slice(2)}`);
        await writeFile(f, "");
        return [k, f];
      }),
    ),
  ) as Record<string, string>;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    RUNNER_TEMP: work,
    ...files,
    ...extraEnv,
  };
  for (const [k, v] of Object.entries(inputs)) env[`INPUT_${k.toUpperCase()}`] = v;
  const result = await new Promise<{ code: number; stdout: string }>((resolve) =>
    execFile(process.execPath, [join(bundle, script)], { env }, (error, stdout) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout }),
    ),
  );
  const read = async (k: string) => commandFile(await readFile(files[k]!, "utf8"));
  return {
    ...result,
    outputs: await read("GITHUB_OUTPUT"),
    env: await read("GITHUB_ENV"),
    state: await read("GITHUB_STATE"),
  };
}

describe("action main (dry run)", () => {
  let step: Awaited<ReturnType<typeof runStep>>;
  beforeAll(async () => {
    step = await runStep("main.js", {
      "kubernetes-version": "v1.34.1",
      "pod-network-cidr": "10.244.0.0/16",
      "dry-run": "true",
      name: "ci",
    });
  }, 60_000);

  it("renders the cluster and sets its outputs", async () => {
    expect(step.code).toBe(0);
    const kubeconfig = step.outputs.get("kubeconfig")!;
    expect(kubeconfig).toBe(join(work, "kubeforge-ci/etc/kubernetes/admin.conf"));
    expect(step.outputs.get("kubernetes-version")).toBe("v1.34.1");
    expect(step.outputs.get("ca-cert-hash")).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(step.outputs.get("api-server")).toMatch(/^https:\/\/.+:6443$/);
    expect(step.env.get("KUBECONFIG")).toBe(kubeconfig);
    expect(step.state.get("dry-run-dir")).toBe(join(work, "kubeforge-ci"));
    const manifest = await readFile(
      join(work, "kubeforge-ci/etc/kubernetes/manifests/kube-controller-manager.yaml"),
      "utf8",
    );
    expect(manifest).toContain("--cluster-cidr=10.244.0.0/16");
  });

  it("writes the API objects the dry run would create to a file, not to the log", async () => {
    const file = step.outputs.get("api-objects")!;
    expect(file).toBe(join(work, "kubeforge-ci/api-objects.yaml"));
    const text = await readFile(file, "utf8");
    expect(text).toContain("# CREATE /api/v1/namespaces/kube-public/configmaps\n");
    expect(text).toContain("name: kubeadm-config");
    expect(step.stdout).not.toContain("# CREATE /api");
  });

  it("masks every line of admin.conf's credentials before anything else can print them", async () => {
    const conf = await readFile(step.outputs.get("kubeconfig")!, "utf8");
    const keyData = /client-key-data: (\S+)/.exec(conf)![1]!;
    const masks = step.stdout
      .split("\n")
      .filter((l) => l.startsWith("::add-mask::"))
      .map((l) => l.slice(12));
    expect(masks).toContain(`    client-key-data: ${keyData}`);
    expect(step.stdout.indexOf(`::add-mask::    client-key-data: ${keyData}`)).toBeLessThan(
      step.stdout.indexOf("::set-output") === -1 ? Infinity : step.stdout.indexOf("::set-output"),
    );
  });

  it("groups the log by phase", () => {
    expect(step.stdout).toContain("::group::certs");
    expect(step.stdout).toContain("::group::kubelet-start");
  });
});

describe("action main: refusals", () => {
  it("fails the step with a message naming the input when asked for a live cluster", async () => {
    const step = await runStep("main.js", { "dry-run": "false" });
    expect(step.code).toBe(1);
    expect(step.stdout).toMatch(
      /::error::input "dry-run": this version of kubeforge can only render a cluster/,
    );
  });

  it("fails on a bad input before rendering anything", async () => {
    const step = await runStep("main.js", {
      "dry-run": "true",
      name: "bad",
      "service-cidr": "not-a-cidr",
    });
    expect(step.code).toBe(1);
    expect(step.stdout).toMatch(/::error::.*serviceSubnet/);
    expect(step.state.get("dry-run-dir")).toBeUndefined();
  });
});

describe("action post", () => {
  it("leaves the rendered folder in place", async () => {
    const step = await runStep("post.js", {}, { "STATE_dry-run-dir": join(work, "kubeforge-ci") });
    expect(step.code).toBe(0);
    expect(step.stdout).toContain("rendered files kept in");
  });
});
