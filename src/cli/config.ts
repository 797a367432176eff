import type { Command } from "commander";
import { stat } from "node:fs/promises";
import { homedir, hostname } from "node:os";
import { dirname, resolve } from "node:path";
import { holdsClusterDocument, loadClusterSpec } from "../config/cluster/load.js";
import { clusterDefaultsYAML } from "../config/cluster/print.js";
import { runnerPathReferences } from "../config/cluster/references.js";
import { ConfigError, decodeConfigDocuments } from "../config/load.js";
import { initDefaultsYAML, joinDefaultsYAML, newestRelease } from "../config/print.js";
import { SUPPORTED_RANGE, pinnedRelease } from "../config/versions.js";
import { defaultComponentConfigDocuments } from "../manifests/component-config-defaults.js";
import { subnetOverlapWarnings, validateConfigFile } from "../config/validate.js";
import { readInputFile, readInputFileSync } from "../remote/runner-files.js";

// `kubeforge config print init-defaults|join-defaults|cluster-defaults` and
// `kubeforge config validate` (a kubeadm file, as kubeadm config validate, or a Cluster file).

const PRINTABLE = "init-defaults, join-defaults or cluster-defaults";

/** Problems with the files a Cluster names on this machine (missing, or of the wrong kind). */
async function missingRunnerFiles(
  refs: ReturnType<typeof runnerPathReferences>,
  source: string,
): Promise<string[]> {
  const problems: string[] = [];
  for (const ref of refs) {
    try {
      const st = await stat(ref.path);
      const isDir = st.isDirectory();
      if (ref.kind === "directory" && !isDir) {
        problems.push(`${source}: ${ref.field}: ${ref.path} is not a directory`);
      } else if (ref.kind === "file" && isDir) {
        problems.push(`${source}: ${ref.field}: ${ref.path} is a directory, not a file`);
      }
    } catch (e) {
      problems.push(`${source}: ${ref.field}: cannot use ${ref.path}: ${(e as Error).message}`);
    }
  }
  return problems;
}

/** Validates a Cluster file as `kubeforge up` would read it, files it names included. */
async function validateClusterFile(text: string, file: string): Promise<void> {
  const spec = loadClusterSpec(text, file, {
    baseDir: dirname(resolve(file)),
    home: process.env.HOME || homedir(),
    readFile: (p) => readInputFileSync(p, "kubeadm.configFile"),
    warn: (m) => process.stderr.write(`[config] WARNING: ${m}\n`),
  });
  const problems = await missingRunnerFiles(runnerPathReferences(spec), file);
  if (problems.length > 0) throw new ConfigError(problems);
}

/** The text `config print <kind>` writes; errors name the argument or flag at fault. */
function printedDefaults(
  kind: string,
  o: { componentConfigs?: string; kubernetesVersion?: string },
): string {
  if (kind === "cluster-defaults") return clusterDefaultsYAML();
  if (kind !== "init-defaults" && kind !== "join-defaults") {
    throw new Error(`config print: unknown "${kind}": choose ${PRINTABLE}`);
  }
  let release = newestRelease();
  if (o.kubernetesVersion !== undefined) {
    const pinned = pinnedRelease(o.kubernetesVersion);
    if (!pinned) {
      throw new Error(
        `--kubernetes-version "${o.kubernetesVersion}" is not a version kubeforge supports (${SUPPORTED_RANGE})`,
      );
    }
    release = pinned;
  }
  // pflag's StringSlice: comma-separated, empty items kept (and refused).
  const kinds = o.componentConfigs === undefined ? [] : o.componentConfigs.split(",");
  const components = defaultComponentConfigDocuments(kinds, release);
  const main =
    kind === "init-defaults"
      ? initDefaultsYAML({ release })
      : joinDefaultsYAML({ nodeName: hostname() });
  return [main, ...components].join("---\n");
}

export function registerConfig(program: Command): void {
  const config = program
    .command("config")
    .description("kubeadm configuration files and kubeforge Cluster files");

  config
    .command("print")
    .description("Print kubeadm's default init or join configuration, or a default Cluster file")
    .argument("<kind>", PRINTABLE)
    .option(
      "--component-configs <kinds>",
      "comma-separated component configurations to append defaulted: KubeProxyConfiguration, KubeletConfiguration",
    )
    .option(
      "--kubernetes-version <version>",
      "print as the kubeadm of this version does (default: the newest kubeforge supports)",
    )
    .action((kind: string, o: { componentConfigs?: string; kubernetesVersion?: string }) => {
      process.stdout.write(printedDefaults(kind, o));
    });

  config
    .command("validate")
    .description(
      "Validate a kubeadm configuration file strictly, as kubeadm config validate, or a kubeforge Cluster file",
    )
    .requiredOption("--config <file>", "the file to validate")
    .action(async (o: { config: string }) => {
      const text = await readInputFile(o.config, "--config file");
      if (holdsClusterDocument(text, o.config)) {
        await validateClusterFile(text, o.config);
      } else {
        const docs = decodeConfigDocuments(text, o.config);
        const problems = validateConfigFile(docs);
        if (problems.length > 0) throw new ConfigError(problems);
        const warnings = [
          ...(docs.warnings ?? []),
          ...subnetOverlapWarnings(docs.cluster?.networking),
        ];
        for (const w of warnings) process.stderr.write(`[config] WARNING: ${w}\n`);
      }
      process.stdout.write("ok\n");
    });
}
