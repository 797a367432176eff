import * as core from "@actions/core";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { prepareInit } from "../cluster/init.js";
import { parseKubeConfig } from "../kubeconfig/parse.js";
import { caCertHash } from "../pki/pin.js";
import { LocalHost } from "../remote/local.js";
import { summarizeTimings } from "../workflow/runner.js";
import { GitHubReporter } from "./reporter.js";

// The action's main step. This release renders a single control-plane node with `init`
// (dry-run) and hands its admin.conf to later steps; building a live cluster comes with
// `kubeforge up`.

function list(value: string): string[] | undefined {
  const items = value
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return items.length > 0 ? items : undefined;
}

async function configInput(value: string) {
  if (value.trim() === "") return undefined;
  // A path to a file in the workspace, or the YAML itself.
  if (!value.includes("\n") && existsSync(value)) {
    return { text: await readFile(value, "utf8"), source: value };
  }
  return { text: value, source: "the kubeadm-config input" };
}

function optional(name: string): string | undefined {
  const v = core.getInput(name).trim();
  return v === "" ? undefined : v;
}

async function main(): Promise<void> {
  const name = core.getInput("name") || "kubeforge";
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) {
    throw new Error(`input "name": "${name}" must be lower-case letters, digits and dashes`);
  }
  if (!core.getBooleanInput("dry-run")) {
    throw new Error(
      'input "dry-run": this version of kubeforge can only render a cluster (dry-run: true); live clusters come with `kubeforge up`',
    );
  }
  const runnerTemp = process.env.RUNNER_TEMP ?? "/tmp";
  const dryRunDir = join(runnerTemp, `kubeforge-${name}`);
  const reporter = new GitHubReporter();
  const podNetworkCidr = optional("pod-network-cidr");
  const serviceCidr = optional("service-cidr");
  const kubernetesVersion = optional("kubernetes-version");
  const skipPhases = list(core.getInput("skip-phases"));
  const apiObjects: string[] = [];
  const prepared = await prepareInit({
    config: await configInput(core.getInput("kubeadm-config")),
    flags: {
      ...(podNetworkCidr ? { podNetworkCidr } : {}),
      ...(serviceCidr ? { serviceCidr } : {}),
      ...(kubernetesVersion ? { kubernetesVersion } : {}),
      ...(skipPhases ? { skipPhases } : {}),
      // A rendering job runs where no kubelet or container runtime is expected.
      ignorePreflightErrors: ["all"],
    },
    host: new LocalHost(),
    dryRun: true,
    dryRunDir,
    reporter,
    env: process.env,
    // The API writes the dry run would make go to a file, not into the job log.
    stdout: (text) => apiObjects.push(text),
  });
  core.saveState("dry-run-dir", dryRunDir);
  await prepared.runner.run(prepared.data, { skipPhases: prepared.skipPhases, dryRun: true });
  const apiObjectsFile = join(dryRunDir, "api-objects.yaml");
  await writeFile(apiObjectsFile, apiObjects.join(""), { mode: 0o600 });

  const adminConf = join(dryRunDir, "etc/kubernetes/admin.conf");
  const text = await readFile(adminConf, "utf8");
  reporter.mask(text);
  const kubeconfig = parseKubeConfig(text, adminConf);
  const server = kubeconfig.clusters[0]?.cluster.server ?? "";
  const caFile = join(dryRunDir, prepared.data.cfg.cluster.certificatesDir, "ca.crt");

  core.setOutput("kubeconfig", adminConf);
  core.setOutput("api-server", server);
  core.setOutput("kubernetes-version", prepared.resolved.version);
  core.setOutput("ca-cert-hash", caCertHash(await readFile(caFile)));
  core.setOutput("dry-run-dir", dryRunDir);
  core.setOutput("api-objects", apiObjectsFile);
  core.exportVariable("KUBECONFIG", adminConf);
  await core.summary
    .addHeading("kubeforge", 3)
    .addTable([
      [
        { data: "Kubernetes", header: true },
        { data: "API server", header: true },
        { data: "Rendered into", header: true },
      ],
      [prepared.resolved.version, server, dryRunDir],
    ])
    .addRaw(`Phases: ${summarizeTimings(prepared.runner.timings)}`)
    .write()
    .catch(() => undefined); // no summary file outside GitHub
}

try {
  await main();
} catch (error) {
  // A non-Error throw must fail the step too.
  core.setFailed(error instanceof Error ? error.message : String(error));
}
