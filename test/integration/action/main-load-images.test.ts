import { readdir } from "node:fs/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { bundledMain, runStep, stepReport } from "./support.js";

// The load-images input through the bundled main.js: a bad item, a missing archive or an image
// the runner's engine cannot give fails the step with one sentence naming the input, before
// any host is contacted (no log group opened) — in a dry run too, which checks what a real run
// would load. The import itself is tested over SSH into real containerd
// (test/integration/images/).

let mainJs: string;
beforeAll(async () => {
  mainJs = await bundledMain();
}, 120_000);

const NO_ENGINE = "unix:///nonexistent/kubeforge-test-docker.sock";

const cases: { images: string; says: RegExp }[] = [
  { images: "app:dev, Not An Image", says: /"Not An Image" is neither an image reference/ },
  { images: "a.tar\n./a.tar", says: /"\/\S+\/a\.tar" is listed twice/ },
  {
    images: "build/missing.tar",
    says: /^::error::input load-images: \/\S+\/build\/missing\.tar does not exist$/,
  },
  {
    images: "app:dev",
    says: /^::error::input load-images: the runner's Docker engine \(unix:\/\/\/nonexistent\/kubeforge-test-docker\.sock\) did not answer: /,
  },
];

describe("action main: the load-images input", () => {
  it.each(cases)("refuses $images", async ({ images, says }) => {
    const step = await runStep(mainJs, {
      inputs: { "load-images": images, "dry-run": "true" },
      env: { DOCKER_HOST: NO_ENGINE },
      timeoutMs: 60_000,
    });
    expect(step.code, stepReport(step)).toBe(1);
    const errors = step.stdout.split("\n").filter((l) => l.startsWith("::error::"));
    expect(errors, stepReport(step)).toHaveLength(1);
    expect(errors[0]).toMatch(/^::error::input load-images: /);
    expect(errors[0]).toMatch(says);
    expect(step.stdout).not.toContain("::group::");
    expect(step.state.get("outcome")).toBe("failure");
    expect(step.outputs.size).toBe(0);
    const temp = await readdir(step.runnerTemp, { recursive: true });
    expect(temp.filter((f) => !/^kubeforge-[a-z-]+(\/kubeforge\.log)?$/.test(f))).toEqual([]);
  });
});
