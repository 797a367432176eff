import { readFile } from "node:fs/promises";
import { ESLint } from "eslint";
import tseslint from "typescript-eslint";
import { describe, expect, it } from "vitest";
import { layering } from "../../../scripts/layering.mjs";

// The layering rules (scripts/layering.mjs): real source files with one import added must be
// refused when the import goes against the direction of dependencies, and let through when it
// does not. `npm run lint` applies the same rules (checked below); here they run alone, without
// type information, so the test stays fast.

const eslint = new ESLint({
  cwd: process.cwd(),
  overrideConfigFile: true,
  overrideConfig: [{ languageOptions: { parser: tseslint.parser } }, ...layering],
});

async function problemsWith(file: string, added: string): Promise<string[]> {
  const text = `${added}\n${await readFile(file, "utf8")}`;
  const [result] = await eslint.lintText(text, { filePath: file });
  return result!.messages
    .filter((m) => m.ruleId === "no-restricted-imports" || m.ruleId === "no-restricted-globals")
    .map((m) => `${m.line}: ${m.message}`);
}

describe("the layering lint rule", () => {
  it.each([
    [
      "a pure builder importing the Host port",
      "src/config/duration.ts",
      'import type { Host } from "../remote/host.js";',
    ],
    [
      "a pure builder importing the API layer",
      "src/manifests/etcd.ts",
      'import { isNotFound } from "../kube/errors.js";',
    ],
    ["a pure builder importing a phase", "src/pki/paths.ts", 'import "../phases/init/certs.js";'],
    [
      "a pure builder importing the workflow",
      "src/kubeconfig/parse.ts",
      'import type { Phase } from "../workflow/phase.js";',
    ],
    [
      "a pure builder reading files",
      "src/config/cluster/paths.ts",
      'import { readFileSync } from "node:fs";',
    ],
    [
      "a pure builder opening sockets",
      "src/manifests/addons/coredns.ts",
      'import { connect } from "net";',
    ],
    [
      "an effect module importing the CLI",
      "src/cluster/down.ts",
      'import { registerUp } from "../cli/up.js";',
    ],
    [
      "a pure builder two folders down importing the orchestration",
      "src/config/cluster/paths.ts",
      'import { down } from "../../cluster/down.js";',
    ],
    [
      "a phase importing the action",
      "src/phases/init/certs.ts",
      'import "../../action/inputs.js";',
    ],
  ])("fails on %s", async (_what, file, added) => {
    const problems = await problemsWith(file, added);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^1: /);
  });

  it("fails on a pure builder calling fetch", async () => {
    const problems = await problemsWith(
      "src/config/duration.ts",
      'export const probe = () => fetch("https://dl.k8s.io/release/stable.txt");',
    );
    expect(problems).toEqual([
      "1: Unexpected use of 'fetch'. Pure builders do no I/O: take fetch as a parameter on the effect side.",
    ]);
  });

  it.each([
    [
      "a pure builder importing another pure one and the shared types",
      "src/manifests/etcd.ts",
      'import type { KubeObject } from "../types/kube-object.js";',
    ],
    [
      "a pure builder importing a sibling folder named like an effect one (config/cluster)",
      "src/config/docker/container.ts",
      'import type { ClusterSpec } from "../cluster/types.js";',
    ],
    [
      "the effect side importing a pure builder",
      "src/node/pki-store.ts",
      'import { certFile } from "../pki/paths.js";',
    ],
    [
      "the CLI importing the orchestration",
      "src/cli/up.ts",
      'import { down } from "../cluster/down.js";',
    ],
  ])("lets through %s", async (_what, file, added) => {
    expect(await problemsWith(file, added)).toEqual([]);
  });

  it("is part of the project's lint configuration", async () => {
    const project = new ESLint({ cwd: process.cwd() });
    for (const file of ["src/config/duration.ts", "src/manifests/etcd.ts", "src/cluster/down.ts"]) {
      const config = (await project.calculateConfigForFile(file)) as {
        rules: Record<string, unknown[]>;
      };
      expect(config.rules["no-restricted-imports"]?.[0], file).toBe(2);
    }
  });
});
